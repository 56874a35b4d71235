package fakezk

import (
	"container/heap"
	"sync"
	"time"

	"github.com/zkflow/zkflow/task"
)

// Epoch is the instant a NewClock(time.Time{}) starts at: a fixed time, so
// that ctime/mtime in a simulation's trace do not depend on the wall clock.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Clock is a simulated task.Clock. Time stands still until Advance, Set or
// AdvanceToNext moves it; they call the functions of the timers that fall
// due, in time order (ties in the order AfterFunc was called), on the
// calling goroutine, with no lock held and no real sleep. It is safe for
// concurrent use; the zero value is not usable, call NewClock.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers timerHeap
}

// NewClock returns a clock reading start (Epoch if start is zero).
func NewClock(start time.Time) *Clock {
	if start.IsZero() {
		start = Epoch
	}
	return &Clock{now: start}
}

// Now returns the simulated time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f to run when the clock has been moved d past now. A
// timer with d <= 0 runs at the next Advance (Advance(0) included).
func (c *Clock) AfterFunc(d time.Duration, f func()) task.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &simTimer{c: c, when: c.now.Add(d), seq: c.seq, f: f, index: -1}
	heap.Push(&c.timers, t)
	return t
}

// Advance moves the clock forward by d, firing due timers in order. It
// returns how many fired.
func (c *Clock) Advance(d time.Duration) int {
	return c.Set(c.Now().Add(d))
}

// Set moves the clock to t (never backwards), firing due timers in order.
func (c *Clock) Set(t time.Time) int {
	n := 0
	for {
		c.mu.Lock()
		if len(c.timers) == 0 || c.timers[0].when.After(t) {
			if t.After(c.now) {
				c.now = t
			}
			c.mu.Unlock()
			return n
		}
		tm := heap.Pop(&c.timers).(*simTimer)
		if tm.when.After(c.now) {
			c.now = tm.when
		}
		c.mu.Unlock()
		tm.f()
		n++
	}
}

// NextTimer returns when the earliest pending timer falls due.
func (c *Clock) NextTimer() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) == 0 {
		return time.Time{}, false
	}
	return c.timers[0].when, true
}

// AdvanceToNext moves the clock to the earliest pending timer and fires
// every timer due then. It reports false if no timer is pending.
func (c *Clock) AdvanceToNext() bool {
	when, ok := c.NextTimer()
	if !ok {
		return false
	}
	c.Set(when)
	return true
}

// Pending returns the number of timers not yet fired or stopped.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

type simTimer struct {
	c     *Clock
	when  time.Time
	seq   uint64
	f     func()
	index int
}

// Stop removes the timer; it reports whether it was still pending.
func (t *simTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&t.c.timers, t.index)
	return true
}

type timerHeap []*simTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].when.Equal(h[j].when) {
		return h[i].when.Before(h[j].when)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*simTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	n := len(old)
	t := old[n-1]
	old[n-1] = nil
	t.index = -1
	*h = old[:n-1]
	return t
}

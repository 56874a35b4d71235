package fakezk

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkflow/zkflow/internal/chunk"
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
//
// Now reads the time without a lock (an atomic offset from the start):
// a simulation reads the clock at every request and every step.
type Clock struct {
	start time.Time
	off   atomic.Int64 // nanoseconds since start; written under mu

	mu     sync.Mutex
	seq    uint64
	timers timerHeap
	// bg holds the timers of AfterFuncBackground; countBg has
	// NextTimer, AdvanceToNext and Pending count them too.
	bg      timerHeap
	countBg bool
	// spare is the rest of the chunk add cuts new timers from.
	spare chunk.Of[simTimer]
}

// timerChunk is how many timers the clock allocates at once: one object
// per chunk rather than per timer (a chunk lives while one of its timers
// is referred to; none is ever used twice).
const timerChunk = 32

// NewClock returns a clock reading start (Epoch if start is zero).
func NewClock(start time.Time) *Clock {
	if start.IsZero() {
		start = Epoch
	}
	return &Clock{start: start}
}

// Now returns the simulated time.
func (c *Clock) Now() time.Time {
	return c.start.Add(time.Duration(c.off.Load()))
}

// offset returns t as nanoseconds since the start (saturated, as
// time.Time.Sub).
func (c *Clock) offset(t time.Time) int64 { return int64(t.Sub(c.start)) }

// AfterFunc schedules f to run when the clock has been moved d past now. A
// timer with d <= 0 runs at the next Advance (Advance(0) included).
func (c *Clock) AfterFunc(d time.Duration, f func()) task.Timer { return c.add(d, f, nil, false) }

// AfterFire is AfterFunc(d, r.Fire), without the method value: the
// executor hands its timers so (an allocation fewer per timer).
func (c *Clock) AfterFire(d time.Duration, r interface{ Fire() }) task.Timer {
	return c.add(d, nil, r, false)
}

// AfterFireBackground is AfterFuncBackground(d, r.Fire), as AfterFire.
func (c *Clock) AfterFireBackground(d time.Duration, r interface{ Fire() }) task.Timer {
	return c.add(d, nil, r, true)
}

// add makes a timer due d from now calling f (or r.Fire, if f is nil),
// among the background ones if bg.
func (c *Clock) add(d time.Duration, f func(), r interface{ Fire() }, bg bool) *simTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	now := c.off.Load()
	when := now + int64(d)
	if d > 0 && when < now { // overflow: never
		when = math.MaxInt64
	}
	t := c.spare.New(timerChunk)
	*t = simTimer{c: c, when: when, seq: c.seq, f: f, r: r, index: -1, bg: bg}
	if bg {
		c.bg.push(t)
	} else {
		c.timers.push(t)
	}
	return t
}

// AfterFuncBackground is AfterFunc for a timer that keeps nothing going:
// it fires, in its order, when the clock is moved past it, but NextTimer,
// AdvanceToNext and Pending do not count it (unless CountBackground has
// been set), so a test that advances the clock until no timer is left
// ends though such timers are pending. An executor sets its re-reads of
// watched nodes so (task.Watch): periodic, they would otherwise always
// leave a timer.
func (c *Clock) AfterFuncBackground(d time.Duration, f func()) task.Timer {
	return c.add(d, f, nil, true)
}

// CountBackground has NextTimer, AdvanceToNext and Pending count the
// timers of AfterFuncBackground as others (on), or not (off, the
// default): a simulation whose progress may rest on them alone (a wait
// whose notification the server withheld) moves the clock to them.
func (c *Clock) CountBackground(on bool) {
	c.mu.Lock()
	c.countBg = on
	c.mu.Unlock()
}

// first returns the heap whose earliest timer falls due first (ties: the
// one made first), and false if both are empty. Lock held.
func (c *Clock) first() (*timerHeap, bool) {
	switch {
	case len(c.timers) == 0 && len(c.bg) == 0:
		return nil, false
	case len(c.bg) == 0:
		return &c.timers, true
	case len(c.timers) == 0:
		return &c.bg, true
	}
	a, b := c.timers[0], c.bg[0]
	if b.when < a.when || b.when == a.when && b.seq < a.seq {
		return &c.bg, true
	}
	return &c.timers, true
}

// Advance moves the clock forward by d, firing due timers in order. It
// returns how many fired.
func (c *Clock) Advance(d time.Duration) int {
	return c.Set(c.Now().Add(d))
}

// Set moves the clock to t (never backwards), firing due timers in order.
func (c *Clock) Set(t time.Time) int {
	to := c.offset(t)
	n := 0
	for {
		c.mu.Lock()
		h, ok := c.first()
		if !ok || (*h)[0].when > to {
			if to > c.off.Load() {
				c.off.Store(to)
			}
			c.mu.Unlock()
			return n
		}
		tm := h.pop()
		if tm.when > c.off.Load() {
			c.off.Store(tm.when)
		}
		c.mu.Unlock()
		if tm.f != nil {
			tm.f()
		} else {
			tm.r.Fire()
		}
		n++
	}
}

// NextTimer returns when the earliest pending timer falls due (those of
// AfterFuncBackground counted only with CountBackground).
func (c *Clock) NextTimer() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := &c.timers
	if c.countBg {
		var ok bool
		if h, ok = c.first(); !ok {
			return time.Time{}, false
		}
	}
	if len(*h) == 0 {
		return time.Time{}, false
	}
	return c.start.Add(time.Duration((*h)[0].when)), true
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

// Pending returns the number of timers not yet fired or stopped (those
// of AfterFuncBackground counted only with CountBackground).
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.countBg {
		return len(c.timers) + len(c.bg)
	}
	return len(c.timers)
}

type simTimer struct {
	c     *Clock
	when  int64 // nanoseconds since the clock's start
	seq   uint64
	f     func()
	r     interface{ Fire() } // instead of f (AfterFire)
	index int
	bg    bool // in the clock's bg heap
}

// Stop removes the timer; it reports whether it was still pending.
func (t *simTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	if t.bg {
		t.c.bg.remove(t.index)
	} else {
		t.c.timers.remove(t.index)
	}
	return true
}

// timerHeap is a binary min-heap of timers by (when, seq), each timer
// knowing its index (container/heap's algorithm, without its interface
// calls and boxing).
type timerHeap []*simTimer

func (h timerHeap) less(i, j int) bool {
	if h[i].when != h[j].when {
		return h[i].when < h[j].when
	}
	return h[i].seq < h[j].seq
}

func (h timerHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h timerHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if i == j || !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h timerHeap) down(i0, n int) bool {
	i := i0
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 {
			break
		}
		j := j1
		if j2 := j1 + 1; j2 < n && h.less(j2, j1) {
			j = j2
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

func (h *timerHeap) push(t *simTimer) {
	t.index = len(*h)
	*h = append(*h, t)
	h.up(len(*h) - 1)
}

// pop removes and returns the earliest timer.
func (h *timerHeap) pop() *simTimer {
	n := len(*h) - 1
	h.swap(0, n)
	h.down(0, n)
	return h.take()
}

// remove removes the timer at index i.
func (h *timerHeap) remove(i int) {
	n := len(*h) - 1
	if n != i {
		h.swap(i, n)
		if !h.down(i, n) {
			h.up(i)
		}
	}
	h.take()
}

// take drops the last element and returns it, marked as out of the heap.
func (h *timerHeap) take() *simTimer {
	old := *h
	n := len(old)
	t := old[n-1]
	old[n-1] = nil
	t.index = -1
	*h = old[:n-1]
	return t
}

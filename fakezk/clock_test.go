package fakezk_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

func TestClockFiresInTimeOrder(t *testing.T) {
	clk := fakezk.NewClock(time.Time{})
	var got []string
	at := func(name string) func() {
		return func() { got = append(got, name+"@"+clk.Now().Sub(fakezk.Epoch).String()) }
	}
	clk.AfterFunc(3*time.Second, at("c"))
	clk.AfterFunc(time.Second, at("a"))
	clk.AfterFunc(time.Second, at("a2")) // same instant: creation order
	stop := clk.AfterFunc(2*time.Second, at("stopped"))
	if !stop.Stop() || stop.Stop() {
		t.Fatal("Stop should report true once")
	}
	if n := clk.Advance(5 * time.Second); n != 3 {
		t.Fatalf("fired %d, want 3", n)
	}
	want := []string{"a@1s", "a2@1s", "c@3s"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if d := clk.Now().Sub(fakezk.Epoch); d != 5*time.Second {
		t.Fatalf("now %s, want 5s", d)
	}
}

func TestClockTimerSetByTimerFiresInSameAdvance(t *testing.T) {
	clk := fakezk.NewClock(time.Time{})
	fired := 0
	clk.AfterFunc(time.Second, func() {
		clk.AfterFunc(time.Second, func() { fired++ })
	})
	clk.Advance(3 * time.Second)
	if fired != 1 {
		t.Fatalf("nested timer fired %d times, want 1", fired)
	}
}

func TestClockZeroDelayWaitsForAdvance(t *testing.T) {
	clk := fakezk.NewClock(time.Time{})
	fired := false
	clk.AfterFunc(0, func() { fired = true })
	if fired {
		t.Fatal("fired inside AfterFunc")
	}
	clk.Advance(0)
	if !fired {
		t.Fatal("Advance(0) did not fire a due timer")
	}
}

func TestClockAdvanceToNextAndNeverBackwards(t *testing.T) {
	clk := fakezk.NewClock(time.Time{})
	if clk.AdvanceToNext() {
		t.Fatal("no timer pending")
	}
	clk.AfterFunc(time.Minute, func() {})
	if w, ok := clk.NextTimer(); !ok || w.Sub(fakezk.Epoch) != time.Minute {
		t.Fatalf("next timer %v %v", w, ok)
	}
	clk.AdvanceToNext()
	clk.Set(fakezk.Epoch)
	if clk.Now().Sub(fakezk.Epoch) != time.Minute {
		t.Fatal("clock moved backwards")
	}
}

// TestClockManyTimersStoppedAtRandom: the timer heap under many timers,
// a third of them stopped in random order: the rest fire in (time,
// creation) order, each once, and every Stop reports what it did.
func TestClockManyTimersStoppedAtRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	clk := fakezk.NewClock(time.Time{})
	type want struct {
		at  time.Duration
		seq int
	}
	var fired []want
	var wants []want
	var timers []task.Timer
	for i := range 2000 {
		d := time.Duration(rng.IntN(50)) * time.Millisecond
		w := want{d, i}
		timers = append(timers, clk.AfterFunc(d, func() {
			fired = append(fired, want{clk.Now().Sub(fakezk.Epoch), w.seq})
		}))
		wants = append(wants, w)
	}
	stopped := map[int]bool{}
	for _, i := range rng.Perm(len(timers))[:len(timers)/3] {
		if !timers[i].Stop() {
			t.Fatalf("timer %d: Stop reported false while pending", i)
		}
		stopped[i] = true
	}
	wants = slices.DeleteFunc(wants, func(w want) bool { return stopped[w.seq] })
	slices.SortStableFunc(wants, func(a, b want) int { return int(a.at - b.at) })
	if n := clk.Advance(time.Second); n != len(wants) {
		t.Fatalf("fired %d, want %d", n, len(wants))
	}
	if !slices.Equal(fired, wants) {
		t.Fatalf("fired out of order: first %v, want %v", fired[:10], wants[:10])
	}
	for i, tm := range timers {
		if tm.Stop() {
			t.Fatalf("timer %d: Stop reported true after it fired or was stopped", i)
		}
	}
}

// AfterFuncBackground's doc: the timer "fires, in its order, when the
// clock is moved past it, but NextTimer, AdvanceToNext and Pending do not
// count it (unless CountBackground has been set)".
func TestClockBackgroundTimers(t *testing.T) {
	c := fakezk.NewClock(fakezk.Epoch)
	var got []string
	c.AfterFuncBackground(2*time.Second, func() { got = append(got, "bg2") })
	stopped := c.AfterFuncBackground(time.Second, func() { got = append(got, "stopped") })
	c.AfterFunc(3*time.Second, func() { got = append(got, "fg3") })
	c.AfterFuncBackground(3*time.Second, func() { got = append(got, "bg3") })
	if n := c.Pending(); n != 1 {
		t.Fatalf("Pending = %d, want 1 (the background timers not counted)", n)
	}
	if at, ok := c.NextTimer(); !ok || at != fakezk.Epoch.Add(3*time.Second) {
		t.Fatalf("NextTimer = %v, %v; want the ordinary timer at 3s", at, ok)
	}
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop of a pending background timer: want true, then false")
	}
	if !c.AdvanceToNext() {
		t.Fatal("AdvanceToNext with an ordinary timer pending reported none")
	}
	if want := []string{"bg2", "fg3", "bg3"}; !slices.Equal(got, want) {
		t.Fatalf("fired %v, want %v (time order, ties in the order made)", got, want)
	}
	c.AfterFuncBackground(time.Second, func() { got = append(got, "bg4") })
	if c.AdvanceToNext() || c.Pending() != 0 {
		t.Fatal("AdvanceToNext moved to a background timer alone")
	}
	c.CountBackground(true)
	if c.Pending() != 1 || !c.AdvanceToNext() || got[len(got)-1] != "bg4" {
		t.Fatalf("with CountBackground: Pending %d, fired %v", c.Pending(), got)
	}
}

// firer is a timer target for AfterFire: it records its name and when.
type firer struct {
	name string
	clk  *fakezk.Clock
	got  *[]string
}

func (f *firer) Fire() { *f.got = append(*f.got, f.name+"@"+f.clk.Now().Sub(fakezk.Epoch).String()) }

// AfterFire and AfterFireBackground are AfterFunc and AfterFuncBackground
// with the target's Fire method: one order with AfterFunc's timers (time,
// then creation), Stop, and a background timer left alone by
// AdvanceToNext.
func TestClockAfterFire(t *testing.T) {
	clk := fakezk.NewClock(time.Time{})
	var got []string
	fn := func(name string) func() {
		return func() { got = append(got, name+"@"+clk.Now().Sub(fakezk.Epoch).String()) }
	}
	fire := func(name string) *firer { return &firer{name, clk, &got} }
	clk.AfterFire(2*time.Second, fire("b"))
	clk.AfterFunc(time.Second, fn("a"))
	clk.AfterFire(time.Second, fire("a2"))
	clk.AfterFunc(2*time.Second, fn("b2"))
	if stop := clk.AfterFire(time.Second, fire("stopped")); !stop.Stop() {
		t.Fatal("Stop of a pending AfterFire timer: false")
	}
	clk.AfterFireBackground(10*time.Second, fire("bg"))
	for clk.AdvanceToNext() {
	}
	want := []string{"a@1s", "a2@1s", "b@2s", "b2@2s"}
	if !slices.Equal(got, want) {
		t.Fatalf("fired %v, want %v (the background timer waits)", got, want)
	}
	clk.Advance(10 * time.Second)
	if want = append(want, "bg@10s"); !slices.Equal(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
}

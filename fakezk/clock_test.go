package fakezk_test

import (
	"slices"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
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

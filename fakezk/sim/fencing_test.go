package sim_test

import (
	"slices"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// TestFenceTail reads a growing fencing log with FenceTail and checks
// that the entries it returns, put together, are FenceLog's, and that it
// starts over when the log is not a continuation of what it returned.
func TestFenceTail(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	write := func(token int64, kind string) {
		t.Helper()
		if _, err := sim.Run(w, 0, task.Multi(sim.FencedEntry("/log", token, kind))); err != nil {
			t.Fatal(err)
		}
	}
	var tail sim.FenceTail
	var got []sim.LogEntry
	next := func(wantReset bool, wantNew int) {
		t.Helper()
		es, reset, err := tail.Next(w, "/log")
		if err != nil {
			t.Fatal(err)
		}
		if reset != wantReset || len(es) != wantNew {
			t.Fatalf("Next: %d entries, reset %v; want %d, %v", len(es), reset, wantNew, wantReset)
		}
		if reset {
			got = nil
		}
		got = append(got, es...)
		all, err := sim.FenceLog(w, "/log")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, all) {
			t.Fatalf("entries read so far %v, FenceLog %v", got, all)
		}
	}
	next(true, 0) // no log yet: a first call starts over
	next(false, 0)
	if _, err := sim.Run(w, 0, task.Create("/log", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	next(true, 0)
	write(1, "enter")
	write(1, "exit")
	next(false, 2)
	next(false, 0)
	write(2, "enter")
	next(false, 1)
	// An entry gone: the log is read again from the start.
	if err := w.Server.AdminDelete("/log/t1-exit-0000000001"); err != nil {
		t.Fatal(err)
	}
	write(2, "exit")
	next(true, 3)
	// The directory created again: the same.
	for _, n := range w.Children("/log") {
		if err := w.Server.AdminDelete("/log/" + n); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Server.AdminDelete("/log"); err != nil {
		t.Fatal(err)
	}
	next(true, 0)
	if _, err := sim.Run(w, 0, task.Create("/log", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	write(3, "enter")
	next(true, 1)
	write(3, "exit")
	next(false, 1)
}

package zkops_test

import (
	"math"
	"slices"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// EmptyDir waits for an exhausted directory's counter to restart: when
// the directory empties and it deletes it, and also when someone else
// has deleted it and made it again meanwhile (its counter back at zero,
// already with new children): it does not wait for the new directory to
// empty too, which under steady contention it never does.
func TestEmptyDirEndsWhenReset(t *testing.T) {
	w := world(t, 2, nil)
	if _, err := sim.Run(w, 1, task.Create("/d", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	if err := w.SetCounters("/d", 0, math.MaxInt32); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 1, task.Create("/d/x", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	o := sim.Submit(w, 0, zkops.EmptyDir("/d"))
	w.Drive()
	if o.Done {
		t.Fatalf("EmptyDir ended with a child in the exhausted directory: %v", o.Err)
	}
	// Someone else empties the directory, deletes it and makes it again,
	// and a new contender is in it at once.
	for _, step := range []func() error{
		func() error { return w.Server.AdminDelete("/d/x") },
		func() error { return w.Server.AdminDelete("/d") },
		func() error { return w.Server.AdminCreate("/d", nil, 0) },
		func() error { return w.Server.AdminCreate("/d/y", nil, 0) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	w.Settle(func() bool { return o.Done })
	if !o.Done || o.Err != nil {
		t.Fatalf("EmptyDir after the directory was made again: done %v, %v; want done", o.Done, o.Err)
	}
	if got := w.Children("/d"); !slices.Equal(got, []string{"y"}) {
		t.Errorf("children of the new directory %v, want [y] (EmptyDir must not touch it)", got)
	}
}

// NextSeq reads, from the Stat clients are shown, the number the server
// gives the next sequential child, after creates and deletes, and at the
// counter's maximum.
func TestNextSeq(t *testing.T) {
	w := world(t, 1, nil)
	if _, err := sim.Run(w, 0, task.Create("/n", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		st, _ := w.NodeStat("/n")
		p, err := sim.Run(w, 0, task.Create("/n/c-", nil, task.PersistentSequential))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := zkops.SeqAfter(p, "c-")
		if got := zkops.NextSeq(st); got != want {
			t.Errorf("%s: NextSeq = %d, the next child was %s", when, got, p)
		}
	}
	check("empty")
	for range 3 {
		p, _ := sim.Run(w, 0, task.Create("/n/c-", nil, task.PersistentSequential))
		if _, err := sim.Run(w, 0, task.Delete(p, -1)); err != nil {
			t.Fatal(err)
		}
	}
	check("after creates and deletes")
	if err := w.SetCounters("/n", 0, math.MaxInt32-1); err != nil {
		t.Fatal(err)
	}
	check("near the maximum") // 2*cversion - numChildren has wrapped in int32
	check("at the maximum")
}

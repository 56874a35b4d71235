package election_test

import (
	"math"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// The directory's counter runs out (started 2 short of int32's maximum on
// fakezk: a real server cannot be set there): the leader got the last
// good number, the next two candidates get exhausted numbers, withdraw
// instead of queueing, and wait for the directory to empty; when the
// leader resigns, the directory is deleted and created afresh, its counter
// restarts at zero, and one of them leads with a higher fencing token
// while the other queues behind it.
func TestSequenceExhausted(t *testing.T) {
	w, _ := newWorld(t, 11, 3, fakezk.Config{})
	const dir = "/app/election"
	e := mustElection(t, dir)
	for _, p := range []string{"/app", dir} {
		if _, err := mustRun(t, w, 0, task.Create(p, nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Server.SetCounters(dir, 0, math.MaxInt32-1); err != nil {
		t.Fatal(err)
	}
	l0, err := mustRun(t, w, 0, e.Campaign())
	if err != nil {
		t.Fatal(err)
	}
	if want := "-latch-2147483646"; l0.Path()[len(l0.Path())-len(want):] != want {
		t.Fatalf("first leader's node %s", l0.Path())
	}
	o1 := sim.Submit(w, 1, e.Campaign())
	w.Drive()
	o2 := sim.Submit(w, 2, e.Campaign())
	w.Drive()
	if o1.Done || o2.Done {
		t.Fatalf("elected with the counter exhausted: %+v %+v", o1, o2)
	}
	// The exhausted candidates have withdrawn: only the leader's node.
	if got := w.Children(dir); len(got) != 1 || dir+"/"+got[0] != l0.Path() {
		t.Fatalf("children while exhausted: %v", got)
	}
	old, _ := w.Server.NodeStat(dir)
	if _, err := mustRun(t, w, 0, l0.Resign()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o1.Done || o2.Done }) {
		t.Fatal("nobody elected after the resign")
	}
	first, second, client := o1, o2, 1
	if o2.Done {
		first, second, client = o2, o1, 2
	}
	if first.Err != nil || second.Done {
		t.Fatalf("after the resign: %+v, %+v", first, second)
	}
	st, ok := w.Server.NodeStat(dir)
	if !ok || st.Czxid == old.Czxid {
		t.Fatal("directory not recreated")
	}
	if want := "-latch-0000000000"; first.V.Path()[len(first.V.Path())-len(want):] != want || first.V.Token() <= l0.Token() {
		t.Fatalf("new leader: %s token %d (old token %d)", first.V.Path(), first.V.Token(), l0.Token())
	}
	if len(w.Children(dir)) != 2 {
		t.Fatalf("the other candidate is not queued: %v", w.Children(dir))
	}
	if _, err := mustRun(t, w, client, first.V.Resign()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return second.Done }) || second.Err != nil {
		t.Fatalf("second candidate: %+v", second)
	}
	noReportedErrors(t, w)
}

// A leader numbered near the end of the counter deletes the emptied
// directory when it resigns, so the counter restarts long before it runs
// out.
func TestResetOnIdleResign(t *testing.T) {
	w, _ := newWorld(t, 12, 1, fakezk.Config{})
	const dir = "/app/idle"
	e := mustElection(t, dir)
	for _, p := range []string{"/app", dir} {
		if _, err := mustRun(t, w, 0, task.Create(p, nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Server.SetCounters(dir, 0, math.MaxInt32-100); err != nil {
		t.Fatal(err)
	}
	l, err := mustRun(t, w, 0, e.Campaign())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 0, l.Resign()); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Server.NodeStat(dir); ok {
		t.Fatal("directory still there after the resign near the end of its counter")
	}
	l, err = mustRun(t, w, 0, e.Campaign())
	if err != nil {
		t.Fatal(err)
	}
	if want := "-latch-0000000000"; l.Path()[len(l.Path())-len(want):] != want {
		t.Fatalf("after the reset: %s", l.Path())
	}
	noReportedErrors(t, w)
}

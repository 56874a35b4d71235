package lock_test

import (
	"math"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// The directory's counter runs out while the lock is held: the server
// names every later contender ...2147483647, so the queue order is gone.
// Those contenders withdraw and wait; when the holder releases, the
// directory is deleted and recreated, the counter restarts at zero, and
// the waiters are served one at a time with growing tokens.
func TestSequenceExhausted(t *testing.T) {
	w, _ := newWorld(t, 11, 3, fakezk.Config{})
	const dir = "/locks/w"
	l := mustLock(t, dir)
	for _, p := range []string{"/locks", dir} {
		if _, err := mustRun(t, w, 0, task.Create(p, nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Server.SetCounters(dir, 0, math.MaxInt32-1); err != nil {
		t.Fatal(err)
	}
	h0, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	if h0.Seq() != math.MaxInt32-1 {
		t.Fatalf("first holder's sequence %d", h0.Seq())
	}
	o1 := sim.Submit(w, 1, l.Acquire())
	w.Drive()
	o2 := sim.Submit(w, 2, l.Acquire())
	w.Drive()
	if o1.Done || o2.Done {
		t.Fatalf("acquired with the counter exhausted: %+v %+v", o1, o2)
	}
	// The exhausted contenders have withdrawn: only the holder's node.
	if got := w.Children(dir); len(got) != 1 || dir+"/"+got[0] != h0.Path() {
		t.Fatalf("children while exhausted: %v", got)
	}
	old, _ := w.Server.NodeStat(dir)
	if _, err := mustRun(t, w, 0, h0.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o1.Done || o2.Done }) {
		t.Fatal("nobody acquired after the release")
	}
	first, second := o1, o2
	if o2.Done {
		first, second = o2, o1
	}
	if first.Err != nil || second.Done {
		t.Fatalf("after the release: %+v, %+v", first, second)
	}
	st, ok := w.Server.NodeStat(dir)
	if !ok || st.Czxid == old.Czxid {
		t.Fatal("directory not recreated")
	}
	if first.V.Seq() != 0 || first.V.Token() <= h0.Token() {
		t.Fatalf("new holder: seq %d token %d (old token %d)", first.V.Seq(), first.V.Token(), h0.Token())
	}
	if len(w.Children(dir)) != 2 {
		t.Fatalf("the other waiter is not queued: %v", w.Children(dir))
	}
	client := 1
	if first == o2 {
		client = 2
	}
	if _, err := mustRun(t, w, client, first.V.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return second.Done }) || second.Err != nil {
		t.Fatalf("second waiter: %+v", second)
	}
	if second.V.Seq() != 1 || second.V.Token() <= first.V.Token() {
		t.Fatalf("second waiter: seq %d token %d", second.V.Seq(), second.V.Token())
	}
	noReportedErrors(t, w)
}

// A holder whose number is near the end of the counter deletes the
// directory on release when it is empty, so the counter restarts before it
// runs out; a directory that is not empty stays.
func TestResetOnIdleRelease(t *testing.T) {
	w, _ := newWorld(t, 12, 2, fakezk.Config{})
	const dir = "/locks/r"
	l := mustLock(t, dir)
	for _, p := range []string{"/locks", dir} {
		if _, err := mustRun(t, w, 0, task.Create(p, nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Server.SetCounters(dir, 0, math.MaxInt32-1<<20); err != nil {
		t.Fatal(err)
	}
	// Not empty: a waiter is queued; the directory stays.
	h, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	o := sim.Submit(w, 1, l.Acquire())
	w.Drive()
	if _, err := mustRun(t, w, 0, h.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o.Done }) || o.Err != nil {
		t.Fatalf("waiter: %+v", o)
	}
	if _, ok := w.Server.NodeStat(dir); !ok {
		t.Fatal("directory deleted under a waiter")
	}
	// Empty after this release: deleted.
	if _, err := mustRun(t, w, 1, o.V.Release()); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Server.NodeStat(dir); ok {
		t.Fatalf("directory kept at sequence %d", o.V.Seq())
	}
	h2, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	if h2.Seq() != 0 || !strings.HasSuffix(h2.Path(), "-lock-0000000000") || h2.Token() <= o.V.Token() {
		t.Fatalf("after the reset: %s token %d", h2.Path(), h2.Token())
	}
	noReportedErrors(t, w)
}

// Names the server gives once its counter wrapped ("-2147483648" and up,
// from a real server with creates in its pipeline) and names at the
// maximum are never held: a lock whose directory holds such a contender
// of another client waits for it to go.
func TestWrappedNamesAreWaitedFor(t *testing.T) {
	w, _ := newWorld(t, 13, 2, fakezk.Config{})
	const dir = "/locks/n"
	l := mustLock(t, dir)
	for _, p := range []string{"/locks", dir} {
		if _, err := mustRun(t, w, 0, task.Create(p, nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	// Another client's contender with a wrapped number (as Curator would
	// hold it: it sorts "-2147483648" first).
	foreign, err := mustRun(t, w, 1, task.Create(dir+"/_c_0bad0bad-0000-0000-0000-000000000000-lock--2147483648", nil, task.Ephemeral))
	if err != nil {
		t.Fatal(err)
	}
	o := sim.Submit(w, 0, l.Acquire())
	w.Drive()
	if o.Done {
		t.Fatalf("acquired past a lower wrapped contender: %+v", o)
	}
	if _, err := mustRun(t, w, 1, task.Delete(foreign, task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o.Done }) || o.Err != nil {
		t.Fatalf("after the wrapped contender went: %+v", o)
	}
	if !o.V.IsHeld() || strings.Contains(o.V.Path(), "0bad0bad") {
		t.Fatalf("held %s", o.V.Path())
	}
	noReportedErrors(t, w)
}

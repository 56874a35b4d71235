package rwlock_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/cache"
	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/task"
)

// advance drives w for d of simulated time.
func advance(w *sim.World, d time.Duration) {
	until := w.Clock.Now().Add(d)
	w.Settle(func() bool { return !w.Clock.Now().Before(until) })
}

// Acquire and AcquireRead wait "for the write lock" and "for the read
// lock": they fail only with the scope's error, the session's end, the
// contender node deleted, or an operation's error a retry cannot settle.
// Another user of the waiter's session takes its watch away: a recursive
// cache of the predecessor's node on the same executor stops, and its
// RemoveWatches (of type Any) ends every watch of the session on that
// path, the waiter's exists watch too. The waiters, a writer and a reader
// behind a writer that holds, and a blocking Client's writer, failed with
// task.ErrWatchRemoved while that writer held; they wait on now (a
// removed watch is one more wake-up: list again), and hold in turn once
// it releases. Fails on the code before the fix.
func TestWaitersOutliveAWatchRemovedByAnotherUser(t *testing.T) {
	w, _ := newWorld(t, 3)
	l := mustLock(t, "/review/watched/rw")
	h, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	wr := sim.Submit(w, 1, l.Acquire())
	w.Drive()
	rd := sim.Submit(w, 2, l.AcquireRead())
	w.Drive()
	cl, err := rwlock.NewClient(w.Execs[1], l.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var blockingErr error
	var blockingHeld *rwlock.Held
	blockingDone := false
	w.Go(1, func(a *sim.Actor) {
		blockingHeld, blockingErr = cl.Acquire(a.Context())
		blockingDone = true
	})
	w.Drive()
	if wr.Done || rd.Done || blockingDone {
		t.Fatalf("waiters ended while a writer holds: %+v %+v %v", wr, rd, blockingErr)
	}
	// The writer and the Client's writer (client 1) wait for nodes above
	// the holder's; the reader (client 2) for the highest writer below
	// it. Remove every watch of clients 1 and 2 on every lock node, the
	// way a recursive cache of each node stopping would, highest first
	// (on the old code a waiter's failure deleted its node, waking the
	// one behind it before its own watch was removed).
	names := w.Children(l.Dir())
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(b[len(b)-10:], a[len(a)-10:]) })
	if len(names) != 4 {
		t.Fatalf("nodes %v, want the holder's and three waiters'", names)
	}
	for _, name := range names {
		for _, i := range []int{1, 2} {
			if _, err := mustRun(t, w, i, task.RemoveWatches(l.Dir()+"/"+name, task.WatcherAny)); err != nil && !errors.Is(err, task.CodeNoWatcher) {
				t.Fatalf("RemoveWatches %s on client %d: %v", name, i, err)
			}
		}
	}
	advance(w, 10*time.Second)
	if wr.Done || rd.Done || blockingDone {
		t.Fatalf("waiters ended while a writer holds, after another user of their sessions removed their watches: writer %v, reader %v, Client %v (done %v)",
			wr.Err, rd.Err, blockingErr, blockingDone)
	}
	// And once more through a recursive cache of the holder's node.
	tc, err := cache.NewTree(h.Path(), cache.WithRecursive())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 1, tc.Start()); err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 1, tc.Stop()); err != nil {
		t.Fatal(err)
	}
	advance(w, 10*time.Second)
	if wr.Done || rd.Done || blockingDone {
		t.Fatalf("waiters ended while a writer holds, after a recursive cache of %s stopped: writer %v, reader %v, Client %v (done %v)",
			h.Path(), wr.Err, rd.Err, blockingErr, blockingDone)
	}
	if _, err := mustRun(t, w, 0, h.Release()); err != nil {
		t.Fatal(err)
	}
	// The three hold in turn, each released once it holds.
	released := [3]bool{}
	for range 3 {
		ready := func() bool {
			return (wr.Done && !released[0]) || (rd.Done && !released[1]) || (blockingDone && !released[2])
		}
		if !w.Settle(ready) {
			t.Fatalf("a waiter never held after the release: %+v %+v %v (done %v)", wr, rd, blockingErr, blockingDone)
		}
		var (
			held *rwlock.Held
			err  error
			i    int
		)
		switch {
		case wr.Done && !released[0]:
			released[0], held, err, i = true, wr.V, wr.Err, 1
		case rd.Done && !released[1]:
			released[1], held, err, i = true, rd.V, rd.Err, 2
		default:
			released[2], held, err, i = true, blockingHeld, blockingErr, 1
		}
		if err != nil {
			t.Fatalf("a waiter failed after the release: %v", err)
		}
		if _, err := mustRun(t, w, i, held.Release()); err != nil {
			t.Fatal(err)
		}
	}
	if left := w.Children(l.Dir()); len(left) != 0 {
		t.Fatalf("nodes left: %v", left)
	}
	noReportedErrors(t, w)
}

// An acquire whose number is the counter's last (zkops.Exhausted) waits
// for the directory to empty, with a child watch on the directory, and
// then creates its node again in the directory made anew: it waits, it
// does not fail. Another user of its session takes that watch away: a
// recursive cache of the lock's directory stops (RemoveWatches of type
// Any on the directory). The acquire failed with task.ErrWatchRemoved
// while the first reader held; it waits on now, and holds once the
// directory is empty. Fails on the code before the fix.
func TestExhaustedWaitOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	w, _ := newWorld(t, 2)
	l := mustLock(t, "/review/watched/exhausted")
	for _, p := range []string{"/review", "/review/watched", l.Dir()} {
		if _, err := mustRun(t, w, 0, task.Create(p, nil, task.Persistent)); err != nil && !errors.Is(err, task.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	if err := w.Server.SetCounters(l.Dir(), 0, math.MaxInt32-1); err != nil {
		t.Fatal(err)
	}
	first, err := mustRun(t, w, 0, l.AcquireRead())
	if err != nil || first.Seq() != math.MaxInt32-1 {
		t.Fatalf("first: %v", err)
	}
	second := sim.Submit(w, 1, l.Acquire())
	w.Drive()
	if second.Done {
		t.Fatalf("a writer with an exhausted number ended while a reader holds: %+v", second)
	}
	tc, err := cache.NewTree(l.Dir(), cache.WithRecursive())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 1, tc.Start()); err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 1, tc.Stop()); err != nil {
		t.Fatal(err)
	}
	advance(w, 10*time.Second)
	if second.Done {
		t.Fatalf("the writer waiting for the counter's reset ended after a recursive cache of %s stopped, a reader holding: %v", l.Dir(), second.Err)
	}
	if _, err := mustRun(t, w, 0, first.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return second.Done }) || second.Err != nil {
		t.Fatalf("second: %+v", second)
	}
	if second.V.Seq() != 0 || second.V.Token() <= first.Token() {
		t.Fatalf("second: seq %d token %d (first's %d)", second.V.Seq(), second.V.Token(), first.Token())
	}
	if _, err := mustRun(t, w, 1, second.V.Release()); err != nil {
		t.Fatal(err)
	}
	noReportedErrors(t, w)
}

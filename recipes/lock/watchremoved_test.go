package lock_test

import (
	"math"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/cache"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// A watch another user of the session takes away (RemoveWatches of type
// Any, as a recursive cache of the path does when it stops: ZooKeeper 3.8
// cannot remove one watch alone) is no news about the lock: the watched
// node is neither gone nor written. These tests remove, on the waiter's
// or holder's own session, every watch the lock has set on a path, and
// check that the lock goes on as if nothing happened.

// settleFor drives w for d of simulated time.
func settleFor(w *sim.World, d time.Duration) {
	until := w.Clock.Now().Add(d)
	w.Settle(func() bool { return !w.Clock.Now().Before(until) })
}

func removeWatches(t *testing.T, w *sim.World, i int, path string) {
	t.Helper()
	if _, err := mustRun(t, w, i, task.RemoveWatches(path, task.WatcherAny)); err != nil {
		t.Fatalf("RemoveWatches %s on client %d: %v", path, i, err)
	}
}

// "A hold ends once ... after a loss (the session expired or was closed,
// the node was deleted, or its data changed by someone else)". The holder
// asked Done, so its node is watched; another user of its session removes
// the watches on the lock node (a recursive cache of that path stopping).
// The hold ended with ErrLockLost ("watch removed") and its node was
// deleted while the session lived, the lock free for the next contender
// though nothing had happened to it. It goes on now (the node is watched
// again), and a deletion after that is still heard.
func TestHoldOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	w, _ := newWorld(t, 61, 2, fakezk.Config{})
	const dir = "/locks/watched"
	l := mustLock(t, dir)
	h, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	_ = h.Done() // the node watch
	w.Drive()
	// Once by hand, once by a recursive cache of the node stopping.
	removeWatches(t, w, 0, h.Path())
	settleFor(w, 10*time.Second)
	tc, err := cache.NewTree(h.Path(), cache.WithRecursive())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 0, tc.Start()); err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 0, tc.Stop()); err != nil {
		t.Fatal(err)
	}
	settleFor(w, 10*time.Second)
	if err := h.Err(); err != nil || !h.IsHeld() {
		t.Fatalf("the hold ended after another user of the session removed its watch on %s: IsHeld %v, Err %v", h.Path(), h.IsHeld(), err)
	}
	if _, ok := w.NodeStat(h.Path()); !ok {
		t.Fatalf("the holder's node %s is gone, its session live", h.Path())
	}
	if _, err := mustRun(t, w, 0, h.Fenced(&task.CreateRequest{Path: "/fenced", Mode: task.Persistent})); err != nil {
		t.Fatalf("fenced write after the watch was removed: %v", err)
	}
	other := sim.Submit(w, 1, l.TryAcquire())
	w.Settle(func() bool { return other.Done })
	if other.Err == nil {
		t.Fatalf("client 1 took the lock while client 0 holds it")
	}
	// The node is still watched: an operator's delete ends the hold.
	if _, err := mustRun(t, w, 1, task.Delete(h.Path(), task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return h.Err() != nil }) || !isClosed(h.Done()) {
		t.Fatalf("the operator's delete of %s unheard after the watch was set again: Err %v", h.Path(), h.Err())
	}
	noReportedErrors(t, w)
}

// Acquire fails "with the scope's error ..., with task.ErrSessionExpired
// ..., with ErrLockLost when someone else deleted the contender node, or
// with an operation's error that a retry cannot settle"; a waiter is
// woken by its predecessor's watch. Another user of the waiters' sessions
// removes their watches on their predecessors: client 1 waits on the
// holder, the lowest (exists watch), client 2 on client 1 (data and
// child watches, the handoff by mark). Both Acquires failed with
// task.ErrWatchRemoved, their predecessors still there; they wait on now
// (a removed watch is one more wake-up), and each holds in turn.
func TestAcquireOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	w, _ := newWorld(t, 62, 3, fakezk.Config{})
	const dir = "/locks/watched"
	l := mustLock(t, dir)
	h0, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	o1 := sim.Submit(w, 1, l.Acquire())
	w.Drive()
	o2 := sim.Submit(w, 2, l.Acquire())
	w.Drive()
	p1, _ := w.LowestOwned(dir, 1, nil)
	if p1 == "" || o1.Done || o2.Done {
		t.Fatalf("queue: client 1 node %q, %+v, %+v", p1, o1, o2)
	}
	for _, rm := range []struct {
		client int
		pred   string
	}{{2, dir + "/" + p1}, {1, h0.Path()}} {
		removeWatches(t, w, rm.client, rm.pred)
		settleFor(w, 10*time.Second)
		if o1.Done || o2.Done {
			t.Fatalf("waiters ended with their predecessors there, after another user of client %d's session removed its watches on %s: client 1 %+v, client 2 %+v", rm.client, rm.pred, o1, o2)
		}
	}
	if _, err := mustRun(t, w, 0, h0.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o1.Done }) || o1.Err != nil || o2.Done {
		t.Fatalf("after client 0 released: client 1 %+v, client 2 %+v", o1, o2)
	}
	if _, err := mustRun(t, w, 1, o1.V.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o2.Done }) || o2.Err != nil {
		t.Fatalf("after client 1 released: client 2 %+v", o2)
	}
	if o2.V.Token() <= o1.V.Token() || o1.V.Token() <= h0.Token() {
		t.Fatalf("tokens %d, %d, %d", h0.Token(), o1.V.Token(), o2.V.Token())
	}
	if _, err := mustRun(t, w, 2, o2.V.Release()); err != nil {
		t.Fatal(err)
	}
	noReportedErrors(t, w)
}

// The same through the blocking face, with a recursive cache of the lock
// directory on the waiter's executor (someone watching the contenders):
// the directory's counter is exhausted, so the waiter has withdrawn and
// waits with a child watch on the directory for it to empty (Sequence
// wrap-around). The cache stops (RemoveWatches of type Any on the
// directory): Client.Acquire failed with task.ErrWatchRemoved, the lock
// held by another; it waits on now and holds once the holder releases.
func TestExhaustedWaiterOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	w, _ := newWorld(t, 63, 2, fakezk.Config{})
	const dir = "/locks/watched"
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
	cl, err := lock.NewClient(w.Execs[1], dir)
	if err != nil {
		t.Fatal(err)
	}
	var (
		held    *lock.Held
		heldErr error
		done    bool
	)
	w.Go(1, func(a *sim.Actor) {
		held, heldErr = cl.Acquire(a.Context())
		done = true
	})
	w.Drive()
	tc, err := cache.NewTree(dir, cache.WithRecursive())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 1, tc.Start()); err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 1, tc.Stop()); err != nil {
		t.Fatal(err)
	}
	settleFor(w, 10*time.Second)
	if done {
		t.Fatalf("Client.Acquire ended while the lock is held, after another user of its session removed its watch on %s: %v", dir, heldErr)
	}
	if _, err := mustRun(t, w, 0, h0.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return done }) || heldErr != nil {
		t.Fatalf("Client.Acquire after the release: %v (done %v)", heldErr, done)
	}
	if held.Token() <= h0.Token() {
		t.Fatalf("tokens %d then %d", h0.Token(), held.Token())
	}
	var relErr error
	relDone := false
	w.Go(1, func(a *sim.Actor) {
		relErr = cl.Release(a.Context(), held)
		relDone = true
	})
	if !w.Settle(func() bool { return relDone }) || relErr != nil {
		t.Fatalf("Release: %v", relErr)
	}
	noReportedErrors(t, w)
}

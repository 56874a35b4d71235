package barrier_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/recipes/cache"
	"github.com/zkflow/zkflow/task"
)

// Barrier.Wait: "after every wake-up it checks again with a new watch
// ... It fails with the scope's error (deadline, cancel), or
// task.ErrSessionExpired or task.ErrClosed when the session ends";
// Client.Wait "blocks until the barrier's node does not exist". Another
// user of the waiter's session takes its watch away: a recursive cache of
// the barrier's node on the same executor stops, and its RemoveWatches
// (of type Any) ends every watch of the session on the path, the Wait's
// exists watch too. Both faces' Waits failed with task.ErrWatchRemoved
// while the barrier was up; they wait on now (a removed watch is one more
// wake-up), and pass once the barrier is removed. Fails on the code
// before the fix.
func TestWaitOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	w := newTestWorld(t, 49, 2)
	const path = "/review/watched/gate"
	g, _ := barrier.NewClient(w.Execs[0], path)
	if _, err := sim.Run(w, 1, g.Barrier().Set([]byte("up"))); err != nil {
		t.Fatal(err)
	}
	tf := sim.Submit(w, 0, g.Barrier().Wait())
	var blockingErr error
	blockingDone := false
	w.Go(0, func(a *sim.Actor) {
		blockingErr = g.Wait(a.Context())
		blockingDone = true
	})
	w.Drive()
	tc, err := cache.NewTree(path, cache.WithRecursive())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, tc.Start()); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, tc.Stop()); err != nil {
		t.Fatal(err)
	}
	settleFor(w, 10*time.Second)
	if tf.Done || blockingDone {
		t.Fatalf("the Waits ended while the barrier is up, after another user of the session removed the watches on %s: task face %v, Client %v (done %v)",
			path, tf.Err, blockingErr, blockingDone)
	}
	if _, err := sim.Run(w, 1, g.Barrier().Remove()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return tf.Done && blockingDone }) || tf.Err != nil || blockingErr != nil {
		t.Fatalf("the Waits after the barrier's removal: task face %+v, Client %v (done %v)", tf, blockingErr, blockingDone)
	}
}

// The double barrier's waits, likewise: "Every wake-up is only a hint:
// the condition is checked again after each one". Another user of the
// sessions removes their watches (RemoveWatches of type Any: on the
// ready node while a participant waits in Enter, on its own node too; on
// the highest node while the lowest waits in Leave): Enter and Leave
// failed with task.ErrWatchRemoved; they wait on now, and return once
// the barrier is full, and once everyone has left. Fails on the code
// before the fix.
func TestDoubleBarrierOutlivesWatchesRemovedByAnotherUser(t *testing.T) {
	w := newTestWorld(t, 50, 2)
	d, _ := barrier.NewDouble("/review/watched/round", 2)
	remove := func(i int, path string) {
		t.Helper()
		if _, err := sim.Run(w, i, task.RemoveWatches(path, task.WatcherAny)); err != nil {
			t.Fatalf("RemoveWatches %s: %v", path, err)
		}
	}
	e0 := sim.Submit(w, 0, d.Enter())
	w.Drive()
	nodes := participantNodes(w, d.Dir())
	if len(nodes) != 1 || e0.Done {
		t.Fatalf("first participant: %v, %+v", nodes, e0)
	}
	for _, n := range []string{nodes[0], barrier.ReadyNode} {
		remove(0, d.Dir()+"/"+n)
		settleFor(w, 10*time.Second)
		if e0.Done {
			t.Fatalf("Enter ended with 1 of 2 after its watch on %s was removed: %v", n, e0.Err)
		}
	}
	e1 := sim.Submit(w, 1, d.Enter())
	if !w.Settle(func() bool { return e0.Done && e1.Done }) || e0.Err != nil || e1.Err != nil {
		t.Fatalf("enter: %+v %+v", e0, e1)
	}
	lowest, highest := 0, 1
	ps := []*barrier.Participant{e0.V, e1.V}
	if seqSuffix(ps[1].Path()) < seqSuffix(ps[0].Path()) {
		lowest, highest = 1, 0
	}
	l := sim.Submit(w, lowest, ps[lowest].Leave())
	w.Drive()
	remove(lowest, ps[highest].Path())
	settleFor(w, 10*time.Second)
	if l.Done {
		t.Fatalf("the lowest's Leave ended with the highest in, after its watch was removed: %v", l.Err)
	}
	lh := sim.Submit(w, highest, ps[highest].Leave())
	if !w.Settle(func() bool { return l.Done && lh.Done }) || l.Err != nil || lh.Err != nil {
		t.Fatalf("leave: %+v %+v", l, lh)
	}
	if left := participantNodes(w, d.Dir()); len(left) > 0 {
		t.Fatalf("participant nodes left: %v", left)
	}
}

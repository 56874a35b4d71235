package zkops_test

import (
	"math"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// A watch another user of the session takes away (RemoveWatches of type
// Any on the path: a cache of the node stopping) is no change of the
// node and no failure. WaitChange reports it as a change ("look again":
// not gone), so that a waiter in a queue lists again with a fresh watch;
// WatchNode starts its next round. Both failed with task.ErrWatchRemoved:
// a lock's waiter gave up its place, a holder's lease was taken for lost.
func TestWatchRemovedByAnotherUserIsAWakeUp(t *testing.T) {
	w := world(t, 1, nil)
	if _, err := sim.Run(w, 0, task.Create("/p", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	remove := func() {
		t.Helper()
		if _, err := sim.Run(w, 0, task.RemoveWatches("/p", task.WatcherAny)); err != nil {
			t.Fatalf("RemoveWatches: %v", err)
		}
	}

	o := sim.Submit(w, 0, zkops.WaitChange("/p"))
	w.Drive()
	if o.Done {
		t.Fatalf("WaitChange ended with the node unchanged: %v", o.Err)
	}
	remove()
	if !w.Settle(func() bool { return o.Done }) || o.Err != nil || o.V {
		t.Errorf("WaitChange after its watch was removed: %+v, want done, not gone (look again)", o)
	}

	h := sim.Submit(w, 0, zkops.WatchNode("/p", 0, nil))
	w.Drive()
	if h.Done {
		t.Fatalf("WatchNode ended with the node unchanged: %v", h.Err)
	}
	remove()
	w.Drive()
	if h.Done {
		t.Fatalf("WatchNode ended when its watch was removed, the node unchanged: %v", h.Err)
	}
	// Still watching: its next round set a fresh watch.
	if _, err := sim.Run(w, 0, task.Delete("/p", task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return h.Done }) || h.Err == nil {
		t.Errorf("WatchNode after the node's delete: %+v, want it ended (node deleted)", h)
	}
}

// EmptyDir too: a removed child watch of the exhausted directory is a
// wake-up (it looks again and waits on), not a failure.
func TestEmptyDirOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
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
	if _, err := sim.Run(w, 0, task.RemoveWatches("/d", task.WatcherAny)); err != nil {
		t.Fatalf("RemoveWatches: %v", err)
	}
	w.Drive()
	if o.Done {
		t.Fatalf("EmptyDir ended when its watch was removed, the child still there: %v", o.Err)
	}
	if err := w.Server.AdminDelete("/d/x"); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o.Done }) || o.Err != nil {
		t.Fatalf("EmptyDir once the directory emptied: done %v, %v", o.Done, o.Err)
	}
}

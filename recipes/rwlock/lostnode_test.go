package rwlock_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/rwlock"
)

// A write lock lost while its session lives (an operator writes its node:
// the hold ends) has its node deleted: it used to stay at the head of
// the queue, so a waiting reader waited for the holder's session to end.
func TestLostHoldsNodeIsDeleted(t *testing.T) {
	w, _ := newWorld(t, 2)
	l := mustLock(t, "/rw")
	h, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	_ = h.Err() // ask: the node is watched from now on
	o := sim.Submit(w, 1, l.AcquireRead())
	w.Drive()
	if err := w.Server.AdminSetData(h.Path(), []byte("operator")); err != nil {
		t.Fatal(err)
	}
	there := func() bool { _, ok := w.NodeStat(h.Path()); return ok }
	if !w.Settle(func() bool { return isClosed(h.Done()) && o.Done }) {
		t.Fatalf("after the write: hold ended %v, reader %+v, node there: %v", isClosed(h.Done()), o, there())
	}
	if !errors.Is(h.Err(), rwlock.ErrLockLost) || o.Err != nil || there() {
		t.Fatalf("holder %v, reader %+v, lost hold's node there: %v", h.Err(), o, there())
	}
}

package semaphore_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/semaphore"
)

// A lease lost while its session lives (an operator writes its node: the
// lease ends) has its node deleted: it used to stay, counted as a lease
// taken, so a waiter waited for the holder's session to end.
func TestLostLeaseNodeIsDeleted(t *testing.T) {
	w, _ := newWorld(t, 7, 2)
	m := mustSem(t, "/s", 1)
	l, err := mustRun(t, w, 0, m.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Err() // ask: the node is watched from now on
	o := sim.Submit(w, 1, m.Acquire())
	w.Drive()
	if err := w.Server.AdminSetData(l.Path(), []byte("operator")); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return isClosed(l.Done()) && o.Done }) {
		t.Fatalf("after the write: lease ended %v, waiter %+v, lease node there: %v", isClosed(l.Done()), o, nodeThere(w, l.Path()))
	}
	if !errors.Is(l.Err(), semaphore.ErrLeaseLost) || o.Err != nil || nodeThere(w, l.Path()) {
		t.Fatalf("holder %v, waiter %+v, lost lease's node there: %v", l.Err(), o, nodeThere(w, l.Path()))
	}
}

func nodeThere(w *sim.World, path string) bool {
	_, ok := w.NodeStat(path)
	return ok
}

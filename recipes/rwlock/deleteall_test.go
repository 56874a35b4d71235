package rwlock_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/rwlock"
)

// PROTOCOL.md, Faults: "An operator deleting a holder's node ends that
// hold ... A waiter whose own node is deleted fails with ErrLockLost at
// its next listing; one whose watched head goes first takes the lock
// without listing and gets a Held whose node is gone, lost as above. The
// operator deleting the empty directory is harmless (it is created
// again)." An operator deletes the whole directory, every node in it
// first (zkCli's deleteall), while writer W0 holds, W1 waits on it (its
// head), reader R2 waits on W1 (not the lowest writer) and writer W3 on
// R2. W0's hold is lost; W1 either fails or is handed a Held lost from
// the start; R2 and W3 fail with ErrLockLost. No Held is left that looks
// held once watched, nothing is reported to OnError, and the lock works
// again afterwards (the directory is made again).
func TestOperatorDeletesTheWholeDirectory(t *testing.T) {
	w, _ := newWorld(t, 4)
	l := mustLock(t, "/ops/rw")
	w0, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	_ = w0.IsHeld() // sets the node watch
	w1 := sim.Submit(w, 1, l.Acquire())
	w.Drive()
	r2 := sim.Submit(w, 2, l.AcquireRead())
	w.Drive()
	w3 := sim.Submit(w, 3, l.Acquire())
	w.Drive()
	if w1.Done || r2.Done || w3.Done {
		t.Fatalf("waiters ended: %+v %+v %+v", w1, r2, w3)
	}
	for _, k := range w.Children(l.Dir()) {
		if err := w.Server.AdminDelete(l.Dir() + "/" + k); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Server.AdminDelete(l.Dir()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return w1.Done && r2.Done && w3.Done && isClosed(w0.Done()) }) {
		t.Fatalf("after the directory's delete: w0 %v, w1 %+v, r2 %+v, w3 %+v", w0.Err(), w1, r2, w3)
	}
	if !errors.Is(w0.Err(), rwlock.ErrLockLost) {
		t.Fatalf("holder: %v", w0.Err())
	}
	if w1.Err == nil {
		h := w1.V
		_ = h.IsHeld()
		if !w.Settle(func() bool { return isClosed(h.Done()) }) || !errors.Is(h.Err(), rwlock.ErrLockLost) {
			t.Fatalf("W1 handed a Held whose node is gone: Err %v", h.Err())
		}
	} else if !errors.Is(w1.Err, rwlock.ErrLockLost) {
		t.Fatalf("W1: %v", w1.Err)
	}
	for name, o := range map[string]*sim.Outcome[*rwlock.Held]{"R2": r2, "W3": w3} {
		if !errors.Is(o.Err, rwlock.ErrLockLost) {
			t.Fatalf("%s: %+v, want ErrLockLost", name, o)
		}
	}
	for i := range 4 {
		h, err := mustRun(t, w, i, l.TryAcquire())
		if err != nil {
			t.Fatalf("TryAcquire on client %d after the delete: %v (children %v)", i, err, w.Children(l.Dir()))
		}
		if _, err := mustRun(t, w, i, h.Release()); err != nil {
			t.Fatal(err)
		}
	}
	noReportedErrors(t, w)
}

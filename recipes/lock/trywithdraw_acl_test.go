package lock_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// ErrBusy's doc: TryAcquire "fails with ErrBusy, leaving no node behind".
// A try behind a holder whose withdrawal an ACL refuses (an operator
// closed the directory as it withdrew) fails with the refusal,
// task.ErrNoAuth, not ErrBusy: its node is still there; it goes within
// twice the session timeout once the ACL is put back. On the code
// before, the try failed with ErrBusy with its node in the directory (a
// semaphore's TryAcquire then failed with ErrBusy with its internal lock
// node left: semaphore scenario seed 122, acl class).
func TestTryWithdrawalRefusedByACLIsNotBusy(t *testing.T) {
	const dir = "/acl/l"
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: sim.ReadOnlyBeforeDelete(1, dir)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	l := mustLock(t, dir)
	h, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	_, err = mustRun(t, w, 1, l.TryAcquire())
	if errors.Is(err, lock.ErrBusy) || !errors.Is(err, task.ErrNoAuth) {
		t.Fatalf("TryAcquire whose withdrawal the directory's ACL refused: %v, want ErrNoAuth (not ErrBusy: its node is left)", err)
	}
	if kids := w.Children(dir); len(kids) != 2 {
		t.Fatalf("while the directory is closed it holds %v, want the holder's node and the try's", kids)
	}
	took, kids, err := w.Reopen(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 1 || took > 2*w.Timeout() {
		t.Fatalf("%s after the directory opened it holds %v, want the holder's node alone within twice the session timeout", took, kids)
	}
	if _, ok := w.Server.NodeStat(h.Path()); !ok {
		t.Fatalf("the holder's node %s is gone", h.Path())
	}
}

package semaphore_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/task"
)

// TryAcquire's doc: it "deletes its node and releases the internal lock,
// and only then fails with ErrBusy: when the caller hears ErrBusy no node
// of the try is left". A try that finds no lease free withdraws its lease
// node and releases the internal lock, whose delete an ACL refuses (an
// operator closed PATH/locks as it released): the try fails with the
// refusal, task.ErrNoAuth, not ErrBusy, since its internal lock node is
// still there; the node goes within twice the session timeout once the
// ACL is put back. On the code before, the try failed with ErrBusy with
// the internal lock's node left (semaphore scenario seed 10121803, acl
// class).
func TestTryWhoseInternalLockReleaseIsRefusedIsNotBusy(t *testing.T) {
	const path = "/acl/sem"
	const locks = path + "/locks"
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: sim.ReadOnlyBeforeDelete(1, locks)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	m := mustSem(t, path, 1)
	l, err := mustRun(t, w, 0, m.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	_, err = mustRun(t, w, 1, m.TryAcquire())
	if errors.Is(err, semaphore.ErrBusy) || !errors.Is(err, task.ErrNoAuth) {
		t.Fatalf("TryAcquire whose internal lock's release PATH/locks refused: %v, want ErrNoAuth (not ErrBusy: its lock node is left)", err)
	}
	if kids := w.Children(locks); len(kids) != 1 {
		t.Fatalf("while PATH/locks is closed it holds %v, want the try's lock node", kids)
	}
	if kids := w.Children(path + "/leases"); len(kids) != 1 || path+"/leases/"+kids[0] != l.Path() {
		t.Fatalf("the leases are %v, want the holder's alone", kids)
	}
	took, kids, err := w.Reopen(locks, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 0 || took > 2*w.Timeout() {
		t.Fatalf("%s after PATH/locks opened it holds %v, want none within twice the session timeout", took, kids)
	}
}

package election_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/election"
)

// PROTOCOL.md (Fencing): "A lease deleted by hand fails the current
// master's fenced writes (the safe direction) and its next write or
// recheck ends its leadership." Schedule: a leads; an operator deletes
// a's lease; a's connection is cut for less than the give-up time and
// comes back to the same session. The recheck after the reconnect must
// end the leadership (ErrLost), not resume Leading on the master node
// alone.
func TestMasterRecheckSeesALeaseDeletedByHand(t *testing.T) {
	w, _ := newWorld(t, 1, 2, fakezk.Config{})
	l0, err := mustRun(t, w, 0, mustMaster(t, "/svc/master", "a").Campaign())
	if err != nil {
		t.Fatal(err)
	}
	w.Drive()
	leases := w.Children("/svc/master" + election.LeasesSuffix)
	if len(leases) != 1 {
		t.Fatalf("leases %v, want a's", leases)
	}
	if err := w.Server.AdminDelete("/svc/master" + election.LeasesSuffix + "/" + leases[0]); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	w.Server.Partition(w.Conns[0], 200*time.Millisecond, true)
	w.Drive()
	if l0.State() != election.Uncertain {
		t.Fatalf("state during the partition: %v", l0.State())
	}
	w.Settle(func() bool { return l0.State() != election.Uncertain })
	w.Settle(func() bool { return false })
	if l0.State() != election.Ended || !errors.Is(l0.Err(), election.ErrLost) {
		t.Fatalf("after the recheck of a master whose lease is gone: state %v, err %v; want Ended with ErrLost", l0.State(), l0.Err())
	}
}

package election_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
)

// A campaign that ends (its deadline) after a multi whose reply was lost
// leaves no master node behind, also when its session comes back through
// a member that has not applied that multi: the cleanup syncs before it
// reads the node. Read from the lagging member, the node looked absent,
// the cleanup deleted the lease alone, and the node, of a live session
// and vouched for by no lease, stood until the session ended: every
// campaign, this session's too, waited for it (master/blocking seed
// 136671956100702: nobody led for two minutes after the faults stopped).
func TestMasterCleanupAfterLostReplyOnLaggingMember(t *testing.T) {
	if err := cleanupAfterLostReply(t); err != nil {
		t.Fatal(err)
	}
	// The test reaches the stale read: with the cleanup's sync left out,
	// it fails.
	restore := canary.Enable("election/master-cleanup-unsynced")
	defer restore()
	if err := cleanupAfterLostReply(t); err == nil {
		t.Fatal("with the cleanup's read unsynced the test still passes")
	} else {
		t.Logf("with the cleanup's read unsynced: %v", err)
	}
}

func cleanupAfterLostReply(t *testing.T) error {
	w, late := worldWithLateMulti(t, 0)
	w.Server.KeepHistory()
	logAndFirstTerm(t, w)

	late.armed = true
	o := sim.Submit(w, 0, c.Timeout(mustMaster(t, "/svc/master", "a").Campaign(), time.Second))
	if !w.Settle(func() bool { return late.held != nil }) {
		t.Fatal("the campaign's multi was never sent")
	}
	// The session comes back through a member that has not applied the
	// multi; the multi is applied and its reply lost; the deadline passes
	// while the client is cut off.
	w.Server.LagAtReconnect(w.Conns[0], time.Hour, true)
	late.release()
	w.Server.Partition(w.Conns[0], w.Timeout()/2, true)
	if !w.Settle(func() bool { return o.Done }) {
		t.Fatal("the campaign never ended")
	}
	if !errors.Is(o.Err, context.DeadlineExceeded) {
		t.Fatalf("campaign: %v, %v, want its deadline", o.V, o.Err)
	}
	if st, ok := w.Server.NodeStat("/svc/master"); !ok || st.EphemeralOwner != w.Conns[0].SessionID() {
		t.Fatalf("the multi was not applied (node %v %+v): the test missed its schedule", ok, st)
	}
	if !w.Settle(func() bool { lagging, _ := w.Conns[0].Lagging(); return lagging }) {
		t.Fatal("client 0 never came back through a lagging member: the test missed its schedule")
	}
	gone := func() bool {
		_, ok := w.Server.NodeStat("/svc/master")
		return !ok && len(w.Children("/svc/master.leases")) == 0
	}
	if !w.Settle(gone) {
		st, _ := w.Server.NodeStat("/svc/master")
		return fmt.Errorf("the ended campaign left its master node (%+v, owner client 0's live session) and leases %v", st, w.Children("/svc/master.leases"))
	}
	if _, err := mustRun(t, w, 1, c.Timeout(mustMaster(t, "/svc/master", "b").Campaign(), time.Minute)); err != nil {
		return fmt.Errorf("another candidate never led: %w", err)
	}
	return nil
}

package election_test

// Promises of the package's docs that an adversarial review found broken:
// each test's comment gives the promise and the schedule that broke it
// (both fail on the code before the fix).

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// PROTOCOL.md, While leading: "The node deleted or changed by someone
// else, or a fenced write refused: ErrLost. As after giving up, a flow
// then deletes our node if it is still our incarnation".
//
// A Master leads. An operator deletes the master node and creates one by
// hand at the same path (a persistent node: another incarnation, which
// leads nothing). The former master's watch fires, its leadership is
// lost, and the delete after the loss (deleteMaster: a multi that checks
// only the lease, then deletes PATH at any version) removed the
// operator's node, which is not its incarnation. After a loss it reads
// the node first now, and deletes the lease alone.
func TestMasterLossLeavesAHandMadeNode(t *testing.T) {
	w, _ := newWorld(t, 1, 1, fakezk.Config{})
	m := mustMaster(t, "/svc/master", "zero")
	l, err := mustRun(t, w, 0, m.Campaign())
	if err != nil {
		t.Fatal(err)
	}
	p := w.ServerPath("/svc/master")
	if err := w.Server.AdminDelete(p); err != nil {
		t.Fatal(err)
	}
	if err := w.Server.AdminCreate(p, []byte("operator"), 0); err != nil {
		t.Fatal(err)
	}
	hand, _ := w.Server.NodeStat(p)
	w.Settle(func() bool { return false })
	if l.Err() == nil {
		t.Fatal("leadership not lost after its node was deleted")
	}
	st, ok := w.Server.NodeStat(p)
	if !ok || st.Czxid != hand.Czxid {
		t.Errorf("the operator's node (czxid %d, not the master's incarnation %d) was deleted after the loss (now there: %v)", hand.Czxid, l.Token(), ok)
	}
}

// Package doc: "Resign is started whatever its ctx, ... the node is
// deleted in the background ..., as Lead does when it ends. ... A
// background resign that fails for good goes to the executor's
// Config.OnError". And Lead: "When lead returns, ... the leadership is
// given up (Resign ...: the node is deleted, so the next candidate need
// not wait for an expiry)"; it returns "nil after one leadership without
// Requeue".
//
// The directory lets candidates create children but not delete them
// (WithACL), so the resign that Lead runs when lead returns fails with
// ErrNoAuth for good. With ctx still alive, Lead waited for that resign,
// dropped its error and returned nil: the caller was not told,
// Config.OnError heard nothing, and the node stayed for the session's
// life. Lead returns the resign's error now.
func TestLeadReturnsAFailedResign(t *testing.T) {
	w, leadErr, held, won := leadUndeletable(t, nil)
	// The resign did fail for good: the same delete, run again, is refused.
	if _, err := mustRun(t, w, 0, won.Resign()); !errors.Is(err, task.ErrNoAuth) {
		t.Fatalf("resign again: %v, want ErrNoAuth", err)
	}
	if !errors.Is(leadErr, task.ErrNoAuth) {
		_, there := w.NodeStat(held)
		t.Errorf("the resign after lead returned failed (node %s still there: %v), yet Lead returned %v", held, there, leadErr)
	}
}

package group_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/group"
	"github.com/zkflow/zkflow/task"
)

// A member leaves; its delete is applied but the reply is lost and it is
// cut off. Meanwhile a process with the same member id joins on another
// session. The leave's retry must not delete that new member node: every
// incarnation of the fixed path starts at version 0. Also when the old
// member's session comes back through a member that has not applied its
// delete, where its node still shows: the retry's read must follow a sync
// (on the code before, a plain read, the retry deleted the new member's
// node).
func TestLeaveLostReplyKeepsNextIncarnation(t *testing.T) {
	t.Run("plain", func(t *testing.T) { leaveLostReplyKeepsNextIncarnation(t, 0) })
	t.Run("lagging member", func(t *testing.T) { leaveLostReplyKeepsNextIncarnation(t, time.Minute) })
}

func leaveLostReplyKeepsNextIncarnation(t *testing.T, lag time.Duration) {
	cut := &sim.Cutter{Match: sim.Deletes("/g/m"), Applied: true, Lag: lag}
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: func(i int, conn *fakezk.Conn) task.Conn {
		if i == 0 {
			return cut.Wrap(conn)
		}
		return conn
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	cut.World = w
	g, _ := group.New("/g")
	m0, err := sim.Run(w, 0, g.Join("m", []byte("old")))
	if err != nil {
		t.Fatal(err)
	}
	cut.Armed = true
	leave := sim.Submit(w, 0, m0.Leave())
	if !w.Settle(func() bool { return cut.Cut }) {
		t.Fatal("the leave's delete was never sent")
	}
	m1, err := sim.Run(w, 1, g.Join("m", []byte("new")))
	if err != nil {
		t.Fatalf("join with the same id while the old member is cut off: %v", err)
	}
	joined, _ := w.Server.NodeStat("/g/m")
	if !w.Settle(func() bool { return leave.Done }) || leave.Err != nil {
		t.Fatalf("leave: %v", leave.Err)
	}
	if lagging, _ := w.Conns[0].Lagging(); lag > 0 && !lagging {
		t.Fatal("the session came back through a member that does not lag: the test shows nothing")
	}
	w.Settle(func() bool { return false })
	st, ok := w.Server.NodeStat("/g/m")
	if !ok || st.EphemeralOwner != m1.Session().ID || st.Czxid != joined.Czxid {
		t.Fatalf("member node %v %+v: the old member's retried leave deleted the new member's node (new session %#x, its node's czxid %d)", ok, st, m1.Session().ID, joined.Czxid)
	}
	if m1.Err() != nil {
		t.Fatalf("new member ended: %v", m1.Err())
	}
}

// Member.Leave deletes the member's own incarnation, also one its keeper
// made and never heard of: an operator deletes the member's node, the
// keeper creates it again, and the create is applied but its reply is
// lost with the connection. Leave, started meanwhile, stops the keeper
// and must still delete that node (it reads which node of its session is
// there: the keeper's), and a second Leave then deletes nothing more.
// Also when the session comes back through a member that has not applied
// the create, and answers watched reads from its view too: Leave's read
// must follow a sync (on the code before, a plain read, it found no node
// and left it for the session's life).
func TestLeaveDeletesTheNodeOfAKeeperCreateInFlight(t *testing.T) {
	t.Run("plain", func(t *testing.T) { leaveDeletesTheNodeOfAKeeperCreateInFlight(t, 0) })
	t.Run("lagging member", func(t *testing.T) { leaveDeletesTheNodeOfAKeeperCreateInFlight(t, time.Minute) })
}

func leaveDeletesTheNodeOfAKeeperCreateInFlight(t *testing.T, lag time.Duration) {
	cut := &sim.Cutter{Match: func(req task.Request) bool {
		r, ok := req.(*task.CreateRequest)
		return ok && r.Path == "/g/x"
	}, Applied: true, Lag: lag}
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: func(i int, conn *fakezk.Conn) task.Conn {
		if i == 0 {
			return cut.Wrap(conn)
		}
		return conn
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	cut.World = w
	w.Server.LagWatchedReads(true)
	g, _ := group.New("/g")
	m, err := sim.Run(w, 0, g.Join("x", nil))
	if err != nil {
		t.Fatal(err)
	}
	joined, _ := w.Server.NodeStat("/g/x")
	cut.Armed = true
	if _, err := sim.Run(w, 1, task.Delete("/g/x", task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return cut.Cut }) {
		t.Fatal("the keeper never created the node again")
	}
	made, ok := w.Server.NodeStat("/g/x")
	if !ok || made.Czxid == joined.Czxid || made.EphemeralOwner != m.Session().ID {
		t.Fatalf("the keeper's create was not applied: node %v %+v", ok, made)
	}
	leave := sim.Submit(w, 0, m.Leave())
	if !w.Settle(func() bool { return leave.Done }) || leave.Err != nil {
		t.Fatalf("leave: done %v, err %v", leave.Done, leave.Err)
	}
	if lagging, _ := w.Conns[0].Lagging(); lag > 0 && !lagging {
		t.Fatal("the session came back through a member that does not lag: the test shows nothing")
	}
	if st, ok := w.Server.NodeStat("/g/x"); ok {
		t.Fatalf("after Leave the node its keeper made is still there: %+v", st)
	}
	if _, err := sim.Run(w, 0, m.Leave()); err != nil {
		t.Fatalf("second Leave: %v", err)
	}
}

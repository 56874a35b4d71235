package group_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// Member.Leave whose delete an operator's ACL refuses fails with
// task.ErrNoAuth and deletes the node in the background once the ACL lets
// it (zkops.KeepDeleting). The next Join of the id on the session (the
// PROTOCOL's "Leave and Join again") finds that node of its session in
// its way; its create's reply lost, it used to take the node for the one
// it made, report itself registered on it, and lose it to the left
// member's background delete once the ACL let it: the new member's node
// deleted while it was not leaving (its keeper made it again, and every
// view saw it leave and come back). A node a Leave on the executor is
// deleting is never taken for the one a create made (leavingNodes): the
// Join waits it out, as another member's.
func TestJoinWaitsForARefusedLeave(t *testing.T) {
	const dir, path = "/g", "/g/a"
	drop := &dropNextCreate{}
	w, g := joinWorld(t, dir, func(conn *fakezk.Conn) task.Conn {
		drop.Conn = conn
		return drop
	})
	m1, err := sim.Run(w, 0, g.Join("a", []byte("v1")))
	if err != nil {
		t.Fatal(err)
	}
	made, _ := w.Server.NodeStat(path)
	readOnly := []task.ACL{{Perms: task.PermRead, Scheme: "world", ID: "anyone"}}
	if err := w.Server.AdminSetACL(dir, readOnly); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, m1.Leave()); !errors.Is(err, task.ErrNoAuth) {
		t.Fatalf("Leave under a read-only directory = %v, want ErrNoAuth", err)
	}
	drop.armed = true
	second := sim.Submit(w, 0, g.Join("a", []byte("v2")))
	until := w.Clock.Now().Add(3 * w.Timeout())
	w.Settle(func() bool { return second.Done || !w.Clock.Now().Before(until) })
	if second.Done {
		st, _ := w.Server.NodeStat(path)
		t.Errorf("second Join ended (%v) while the ACL refused the left member's delete, the node at %s being czxid %#x (the left member's %#x)",
			second.Err, path, st.Czxid, made.Czxid)
	}
	if err := w.Server.AdminSetACL(dir, task.OpenACL); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return second.Done }) || second.Err != nil {
		t.Fatalf("second Join: %+v", second)
	}
	joined, ok := w.Server.NodeStat(path)
	w.Settle(func() bool { return w.Clock.Now().Sub(fakezk.Epoch) > 2*time.Minute })
	if st, ok2 := w.Server.NodeStat(path); !ok || !ok2 || st.Czxid != joined.Czxid || joined.Czxid == made.Czxid {
		t.Fatalf("the second Join's node did not stay: joined on czxid %#x (present %v; the left member's was %#x), now %#x (present %v)",
			joined.Czxid, ok, made.Czxid, st.Czxid, ok2)
	}
}

// Client.Leave with a ctx that has ended returns at once, its delete going
// on in the background (the package doc's deferred Leave); the next Join
// of the id on the session is sent while that delete is under way. Its
// create's reply lost (the connection cut as it is sent), the Join used to
// find the left member's node, of its own session, take it for the one
// it made, and lose it to the Leave's delete right after: the new
// member's node deleted while it was not leaving (its keeper made it
// again; views saw it leave and come back). Now it waits that node out.
func TestJoinWaitsForABackgroundLeave(t *testing.T) {
	const dir, path = "/g", "/g/a"
	drop := &dropNextCreate{}
	w, g := joinWorld(t, dir, func(conn *fakezk.Conn) task.Conn {
		drop.Conn = conn
		return drop
	})
	m1, err := sim.Run(w, 0, g.Join("a", []byte("v1")))
	if err != nil {
		t.Fatal(err)
	}
	made, _ := w.Server.NodeStat(path)
	leave := sim.Submit(w, 0, m1.Leave()) // not waited for
	drop.armed = true
	second := sim.Submit(w, 0, g.Join("a", []byte("v2")))
	var joined task.Stat
	ok := false
	if !w.Settle(func() bool {
		if second.Done && !ok {
			joined, ok = w.Server.NodeStat(path) // the node as the Join returned
			ok = ok || second.Err != nil
		}
		return leave.Done && second.Done
	}) || leave.Err != nil || second.Err != nil {
		t.Fatalf("Leave %+v, second Join %+v", leave, second)
	}
	w.Settle(func() bool { return w.Clock.Now().Sub(fakezk.Epoch) > time.Minute })
	if st, ok2 := w.Server.NodeStat(path); !ok || !ok2 || st.Czxid != joined.Czxid || joined.Czxid == made.Czxid {
		t.Fatalf("the second Join's node did not stay: joined on czxid %#x (present %v; the left member's was %#x), now %#x (present %v)",
			joined.Czxid, ok, made.Czxid, st.Czxid, ok2)
	}
}

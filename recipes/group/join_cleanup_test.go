package group_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// A Join whose create's reply was lost, then refused by an operator's ACL,
// fails and deletes, in the background, any node of its session at the
// path (the lost create may have been applied). That cleanup's read is
// held until the next Join of the same id on the session: the next Join
// waits for the cleanup, so the cleanup never deletes the node the next
// Join made (group seed 71623877407702: the member's node deleted while
// it was not leaving).
func TestJoinWaitsForAFailedJoinsCleanup(t *testing.T) {
	const dir, path = "/g", "/g/a"
	hold := &holdPlainExists{path: path}
	w, g := joinWorld(t, dir, func(conn *fakezk.Conn) task.Conn {
		hold.Conn = conn
		return hold
	})
	first := sim.Submit(w, 0, g.Join("a", []byte("a")))
	w.Execs[0].RunUntilIdle() // the create is sent
	w.Server.Drop(w.Conns[0], false)
	readOnly := []task.ACL{{Perms: task.PermRead, Scheme: "world", ID: "anyone"}}
	if err := w.Server.AdminSetACL(dir, readOnly); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return first.Done && hold.held != nil }) || !errors.Is(first.Err, task.ErrNoAuth) {
		t.Fatalf("first Join: %+v, cleanup's read held %v", first, hold.held != nil)
	}
	if err := w.Server.AdminSetACL(dir, task.OpenACL); err != nil {
		t.Fatal(err)
	}
	second := sim.Submit(w, 0, g.Join("a", []byte("a")))
	w.Settle(func() bool { return second.Done })
	hold.release()
	if !w.Settle(func() bool { return second.Done && second.Err == nil && second.V.Registered() }) {
		t.Fatalf("second Join: %+v", second)
	}
	w.Settle(func() bool { return false })
	if hold.deletes > 0 {
		t.Fatalf("%d deletes of %s sent after the second Join began: the failed Join's cleanup deleted the node the second made", hold.deletes, path)
	}
	if st, ok := w.Server.NodeStat(path); !ok || st.EphemeralOwner != w.Conns[0].SessionID() {
		t.Fatalf("member node %v %+v", ok, st)
	}
}

// holdPlainExists holds its client's first exists of path without a watch
// (a cleanup's read: zkops.DeleteOwned) until release sends it, and
// counts the deletes of path sent after that.
type holdPlainExists struct {
	*fakezk.Conn
	path    string
	sent    bool
	held    func()
	deletes int
}

func (c *holdPlainExists) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if e, ok := req.(*task.ExistsRequest); ok && !c.sent && !e.Watch && e.Path == c.path {
		c.sent = true
		c.held = func() { c.Conn.Do(req, done, watch) }
		return
	}
	if c.held != nil && sim.Deletes(c.path)(req) {
		c.deletes++
	}
	c.Conn.Do(req, done, watch)
}

func (c *holdPlainExists) release() { c.held() }

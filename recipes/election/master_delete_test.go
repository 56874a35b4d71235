package election_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// Two cleanups of one master node (a resign and the leadership's end, say)
// each read it; the first deletes it; another candidate's campaign makes
// it again, at version 0, the version the second read; the second's
// delete, sent late, must not remove the new master's node (master seed
// 6481852880270: two acting masters, when the node alone went at the
// version read).
func TestMasterNodeDeleteSentLateSparesTheNextMaster(t *testing.T) {
	const path = "/svc/master"
	hold := &holdDelete{path: path}
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: func(i int, conn *fakezk.Conn) task.Conn {
		if i != 0 {
			return conn
		}
		hold.Conn = conn
		return hold
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	if _, err := mustRun(t, w, 0, mustMaster(t, path, "zero").Campaign()); err != nil {
		t.Fatal(err)
	}
	st, ok := w.Server.NodeStat(path)
	if !ok || st.Version != 0 {
		t.Fatalf("master node %v %+v", ok, st)
	}
	leases := path + election.LeasesSuffix
	a := sim.Submit(w, 0, election.DeleteMasterNode(path, leases, st))
	b := sim.Submit(w, 0, election.DeleteMasterNode(path, leases, st))
	// One cleanup's delete is held; the other's goes through.
	if !w.Settle(func() bool { return hold.held != nil && (a.Done || b.Done) }) {
		t.Fatalf("cleanups: held %v, %+v, %+v", hold.held != nil, a, b)
	}
	if _, ok := w.Server.NodeStat(path); ok {
		t.Fatal("the first cleanup left the node")
	}
	l1, err := mustRun(t, w, 1, mustMaster(t, path, "one").Campaign())
	if err != nil {
		t.Fatal(err)
	}
	if st1, ok := w.Server.NodeStat(path); !ok || st1.Version != st.Version || st1.Czxid != l1.Token() {
		t.Fatalf("the next master's node %v %+v (the first's was %+v)", ok, st1, st)
	}
	hold.release()
	if !w.Settle(func() bool { return a.Done && b.Done }) || a.Err != nil || b.Err != nil {
		t.Fatalf("cleanups: %+v, %+v", a, b)
	}
	w.Settle(func() bool { return false })
	if st1, ok := w.Server.NodeStat(path); !ok || st1.Czxid != l1.Token() {
		t.Fatalf("the late delete removed the next master's node: %v %+v", ok, st1)
	}
	if l1.Err() != nil {
		t.Fatalf("the next master lost its leadership: %v", l1.Err())
	}
	noReportedErrors(t, w)
}

// holdDelete holds its client's first request that deletes path (alone
// or in a multi) until release sends it.
type holdDelete struct {
	*fakezk.Conn
	path string
	sent bool
	held func()
}

func (c *holdDelete) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if !c.sent && sim.Deletes(c.path)(req) {
		c.sent = true
		c.held = func() { c.Conn.Do(req, done, watch) }
		return
	}
	c.Conn.Do(req, done, watch)
}

func (c *holdDelete) release() { c.held() }

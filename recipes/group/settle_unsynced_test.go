package group_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/recipes/group"
	"github.com/zkflow/zkflow/task"
)

// group/settle-unsynced in a directed history: a node of client 0's
// session at /g/x (czxid A), deleted by an operator since, which the
// client never heard of; a Join of x, its create applied (czxid B) with
// its reply lost, the session back through a member that lags behind
// both (its view is the last zxid the client saw: A's create). Its
// settle read, without a sync (the canary), there shows A, of our
// session, and the Join takes it for the node its create made: the
// member's Leave then deletes A, which is gone, and B, no one's, stays
// until the session ends. After a sync the read shows B.
func TestSettleReadsAfterASync(t *testing.T) {
	canarytest.Both(t, "group/settle-unsynced", func(t *testing.T, bug bool) {
		var w *sim.World
		drop := &createDropper{w: &w}
		w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: func(i int, c *fakezk.Conn) task.Conn {
			if i == 0 {
				drop.Conn = c
				return drop
			}
			return c
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Close)
		w.Server.KeepHistory()
		w.Server.LagWatchedReads(true)
		if _, err := sim.Run(w, 1, task.Create("/g", nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
		if _, err := sim.Run(w, 0, task.Create("/g/x", nil, task.Ephemeral)); err != nil {
			t.Fatal(err)
		}
		old, _ := w.Server.NodeStat("/g/x")
		if _, err := sim.Run(w, 1, task.Delete("/g/x", task.AnyVersion)); err != nil {
			t.Fatal(err)
		}
		g, _ := group.New("/g")
		w.Server.LagAtReconnect(w.Conns[0], time.Minute, true)
		drop.n = 1
		m, err := sim.Run(w, 0, g.Join("x", nil))
		if err != nil {
			t.Fatal(err)
		}
		made, ok := w.Server.NodeStat("/g/x")
		if !ok || made.Czxid == old.Czxid || made.EphemeralOwner != w.Conns[0].SessionID() {
			t.Fatalf("the Join's create was not applied (%v %+v): the test shows nothing", ok, made)
		}
		if _, err := sim.Run(w, 0, m.Leave()); err != nil {
			t.Fatal(err)
		}
		st, left := w.Server.NodeStat("/g/x")
		switch {
		case bug && !left:
			t.Fatalf("with the settle read unsynced the member's Leave deleted the node its Join made: the history no longer reaches a settle through a member that lags behind an operator's delete")
		case bug:
			t.Logf("canary caught: the node the Join made (czxid %#x) is left after its Leave", made.Czxid)
		case left:
			t.Fatalf("after the member's Leave the node its Join made (czxid %#x) is left, no one's (the Join took the gone node %#x, which a lagging member showed, for its own); now %+v",
				made.Czxid, old.Czxid, st)
		}
	})
}

package group_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/group"
	"github.com/zkflow/zkflow/task"
)

// deleteBeforeSettle: once armed, when a create of path fails with
// ErrNodeExists, the read that settles it is held until an operator (op)
// has deleted path: the operator's delete lands between the second
// Join's create and its exists, as any timing may have it.
type deleteBeforeSettle struct {
	*fakezk.Conn
	path   string
	op     func(func())
	armed  bool
	exists bool
}

func (c *deleteBeforeSettle) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	switch r := req.(type) {
	case *task.CreateRequest:
		if r.Path == c.path && c.armed {
			inner := done
			done = func(resp task.Response) {
				c.exists = c.exists || errors.Is(resp.Err, task.ErrNodeExists)
				inner(resp)
			}
		}
	case *task.ExistsRequest:
		if r.Path == c.path && c.exists && c.armed {
			c.armed = false
			c.op(func() { c.Conn.Do(req, done, watch) })
			return
		}
	}
	c.Conn.Do(req, done, watch)
}

// Leave: "never another node at the same path: ... not that of a member
// that joined with the same id since, on this session or another"; Join:
// a Join of an id a member of this session holds waits until its node
// goes. m1 holds x; a second Join of x on the same session gets
// ErrNodeExists; an operator deletes x before its settling read. The
// second Join makes x, as m2. m1's keeper, its create refused, must not
// take m2's node for m1's: m1 reports itself not registered (it waits for
// the node to go), and m1's Leave leaves m2's node. With the keeper
// taking any node of its session (the canary, as before), m1.Leave
// deletes it.
func TestKeeperLeavesASecondJoinsNode(t *testing.T) {
	for _, bug := range []bool{false, true} {
		for seed := uint64(1); seed <= 3; seed++ {
			if deleted := keeperAdopts(t, seed, bug); deleted != bug {
				t.Errorf("seed %d, canary %v: m1.Leave deleted m2's node: %v", seed, bug, deleted)
			}
		}
	}
}

// keeperAdopts runs TestKeeperLeavesASecondJoinsNode's schedule and
// reports whether m1's Leave deleted m2's node.
func keeperAdopts(t *testing.T, seed uint64, bug bool) bool {
	t.Helper()
	if bug {
		defer canary.Enable("group/keeper-takes-any-node")()
	}
	var dc *deleteBeforeSettle
	w, err := sim.New(sim.Config{Seed: seed, Clients: 3, Wrap: func(i int, conn *fakezk.Conn) task.Conn {
		if i == 0 {
			dc = &deleteBeforeSettle{Conn: conn, path: "/g/x"}
			return dc
		}
		return conn
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	dc.op = func(then func()) {
		w.Conns[2].Do(&task.DeleteRequest{Path: "/g/x", Version: task.AnyVersion}, func(task.Response) { then() }, nil)
	}
	g, _ := group.New("/g")
	m1, err := sim.Run(w, 0, g.Join("x", []byte("one")))
	if err != nil {
		t.Fatal(err)
	}
	var removed []string
	if _, err := sim.Run(w, 1, g.Watch(func(ch group.Change) { removed = append(removed, ch.Removed...) })); err != nil {
		t.Fatal(err)
	}
	dc.armed = true
	second := sim.Submit(w, 0, g.Join("x", []byte("two")))
	if !w.Settle(func() bool { return second.Done }) || second.Err != nil {
		t.Fatalf("seed %d: the second Join never returned: %+v", seed, second)
	}
	settleFor(w, 5*time.Second)
	m2 := second.V
	st, ok := w.Server.NodeStat(m2.Path())
	if !ok || !m2.Registered() {
		t.Fatalf("seed %d: m2 not registered (node %v)", seed, ok)
	}
	if !bug && m1.Registered() {
		t.Errorf("seed %d: m1 reports itself registered on m2's node", seed)
	}
	removed = nil
	if _, err := sim.Run(w, 0, m1.Leave()); err != nil {
		t.Fatal(err)
	}
	settleFor(w, 5*time.Second)
	st2, ok2 := w.Server.NodeStat(m2.Path())
	return !ok2 || st2.Czxid != st.Czxid || len(removed) > 0
}

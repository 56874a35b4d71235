package zkops_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// DeleteNode's doc: "A read overtaken by another delete of the path on
// the same session (two flows giving back one node: the other's delete
// sent after the read, so applied after it) is not acted on either: that
// delete may have taken the node, and another session made one at the
// path since, at the version read; the node is read again, after it."
//
// Two flows of client 0 give back its ephemeral node /m (a group
// member's Leave, DeleteNode, and its Join's cleanup, DeleteOwned, say),
// each reading it first. The second's read is applied before the first's
// delete, and its answer, with every reply after it, is held until the
// first's delete is applied and client 1 (another process of the same
// member id) has made /m again, at version 0 as ours was. The second
// flow must leave that node alone. With zkops/delete-overtaken (the
// reads of before) it deletes it at the version its read gave (group
// seed 34387456687789). Each pair of entry points that goes through
// deleteIf is run, in both orders.
func TestDeleteOvertakenByAnotherOfTheSessionLeavesTheNodeMadeSince(t *testing.T) {
	type del func(st task.Stat) task.Task[task.Unit]
	node := func(st task.Stat) task.Task[task.Unit] { return zkops.DeleteNode("/m", st) }
	owned := func(st task.Stat) task.Task[task.Unit] { return zkops.DeleteOwned("/m", st.EphemeralOwner) }
	for _, tc := range []struct {
		name          string
		first, second del
	}{
		{"DeleteNode then DeleteNode", node, node},
		{"DeleteOwned then DeleteOwned", owned, owned},
		{"DeleteNode then DeleteOwned", node, owned},
		{"DeleteOwned then DeleteNode", owned, node},
	} {
		t.Run(tc.name, func(t *testing.T) {
			canarytest.Both(t, zkops.BugDeleteOvertaken, func(t *testing.T, bug bool) {
				if gone := deleteOvertaken(t, tc.first, tc.second); gone != bug {
					t.Fatalf("client 1's node at /m gone: %v; want %v", gone, bug)
				}
			})
		})
	}
}

// deleteOvertaken runs the schedule of
// TestDeleteOvertakenByAnotherOfTheSessionLeavesTheNodeMadeSince and
// reports whether the node client 1 made is gone once both flows ended.
func deleteOvertaken(t *testing.T, first, second func(task.Stat) task.Task[task.Unit]) (gone bool) {
	t.Helper()
	const path = "/m"
	hold := &holdAfterRead{path: path, nth: 2}
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: func(i int, cn *fakezk.Conn) task.Conn {
		if i == 0 {
			hold.Conn = cn
			return hold
		}
		return cn
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := sim.Run(w, 0, task.Create(path, nil, task.Ephemeral)); err != nil {
		t.Fatal(err)
	}
	st, ok := w.Server.NodeStat(path)
	if !ok {
		t.Fatal("client 0's node is missing")
	}
	a := sim.Submit(w, 0, first(st))
	b := sim.Submit(w, 0, second(st))
	// The first flow's read is answered and its delete sent (the
	// second's read was sent before it) and applied; the second's
	// answer waits.
	if !w.Settle(func() bool { _, there := w.Server.NodeStat(path); return hold.holding && !there }) {
		t.Fatalf("the first delete was not applied while the second read's answer was held (held %v)", hold.holding)
	}
	if a.Done || b.Done {
		t.Fatalf("a flow ended while replies were held: first %+v, second %+v", a, b)
	}
	if _, err := sim.Run(w, 1, task.Create(path, nil, task.Ephemeral)); err != nil {
		t.Fatalf("client 1 makes %s again: %v", path, err)
	}
	made, _ := w.Server.NodeStat(path)
	if made.Version != st.Version {
		t.Fatalf("the node made again is at version %d, ours was at %d: the schedule does not test the version", made.Version, st.Version)
	}
	hold.release()
	if !w.Settle(func() bool { return a.Done && b.Done }) {
		t.Fatalf("the flows never ended: first %+v, second %+v", a, b)
	}
	if a.Err != nil || b.Err != nil {
		t.Fatalf("first = %v, second = %v", a.Err, b.Err)
	}
	if len(w.Errs) != 0 {
		t.Fatalf("errors reported: %v", w.Errs)
	}
	now, there := w.Server.NodeStat(path)
	if there && now.Czxid != made.Czxid {
		t.Fatalf("the node at %s is neither client 1's nor gone: %+v", path, now)
	}
	return !there
}

// holdAfterRead holds the reply to its client's nth exists of path and
// every reply after it, in order, until release hands them over: a delay
// of the client's deliveries that starts just before that answer (the
// requests are applied as sent).
type holdAfterRead struct {
	*fakezk.Conn
	path    string
	nth     int
	reads   int
	holding bool
	held    []func()
}

func (c *holdAfterRead) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	start := false
	if e, ok := req.(*task.ExistsRequest); ok && e.Path == c.path {
		c.reads++
		start = c.reads == c.nth
	}
	c.Conn.Do(req, func(r task.Response) {
		if start {
			c.holding = true
		}
		if c.holding {
			c.held = append(c.held, func() { done(r) })
			return
		}
		done(r)
	}, watch)
}

func (c *holdAfterRead) release() {
	c.holding = false
	held := c.held
	c.held = nil
	for _, f := range held {
		f()
	}
}

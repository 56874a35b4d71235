package partition_test

import (
	"errors"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// Hold.Fenced's doc: "ZooKeeper refuses it (an error wrapping ErrLost)
// once the hold has ended, however late it arrives." The fence is the
// lock node's path and version, which names a path, not an incarnation:
// an operator deletes member A's lock node (A's hold ends, B takes the
// item) and then makes a node at that path again (a restore, a mistaken
// re-create: DESIGN.md's operator fault class). A's late write through
// its ended hold is then applied while B holds the item.
func TestAdvFenceSurvivesRecreatedLockNode(t *testing.T) {
	w := newWorld(t, 1, 2)
	both := func(string, []string, []string) []string { return []string{"x"} }
	p, err := partition.New("/fence", []string{"x"}, partition.WithStable(stable), partition.WithAssign(both))
	if err != nil {
		t.Fatal(err)
	}
	a, b := join(t, w, p, 0), join(t, w, p, 1)
	var first, second *partition.Member
	if !w.Settle(func() bool {
		_, ha := a.Hold("x")
		_, hb := b.Hold("x")
		return ha || hb
	}) {
		t.Fatal("nobody holds x")
	}
	first, second = a, b
	if _, ok := b.Hold("x"); ok {
		first, second = b, a
	}
	old, _ := first.Hold("x")
	if err := w.Server.AdminDelete(w.ServerPath(old.Path)); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { _, ok := second.Hold("x"); return ok }) {
		t.Fatal("the second member never took x")
	}
	if _, ok := first.Hold("x"); ok {
		t.Fatal("the first member still reports x held")
	}
	// The operator makes the old node again, at version 0 as before.
	if err := w.Server.AdminCreate(w.ServerPath(old.Path), []byte("restored"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 1, task.Create("/fence-data", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	i := 0
	if first == b {
		i = 1
	}
	_, err = sim.Run(w, i, old.Fenced(task.SetOp("/fence-data", []byte("late"), task.AnyVersion)))
	if !errors.Is(err, partition.ErrLost) {
		data, _, _ := w.NodeData("/fence-data")
		t.Fatalf("a late write through an ended hold (node deleted, item taken by the other member) = %v, data now %q; want ErrLost", err, data)
	}
}

// State Acquired's doc: "the party has been unchanged for Stable and the
// member holds every item of its assignment, and nothing else." With
// kazoo's division, m0 alone holds a and b; when m1 joins, b is m1's and
// m0 drains it (WithDrain, a drain that waits for a node nobody makes:
// b stays held meanwhile). Then an operator deletes m0's lock node of
// a. m0 holds b (not its assignment) and not a (its assignment): it must
// not report Acquired, and Wait must not return [b].
func TestAdvAcquiredHoldsWrongItems(t *testing.T) {
	w := newWorld(t, 1, 2)
	drain := func(partition.Hold) task.Task[task.Unit] {
		return c.Then(task.ExistsW("/gate"), func(sw task.StatWatch) task.Task[task.Unit] {
			return c.Map(sw.Watch.Wait(), func(task.Event) task.Unit { return task.Unit{} })
		})
	}
	p, err := partition.New("/wrong", []string{"a", "b"}, partition.WithStable(stable), partition.WithDrain(drain))
	if err != nil {
		t.Fatal(err)
	}
	m0 := join(t, w, p, 0)
	if !w.Settle(func() bool { return len(m0.Held()) == 2 && m0.State() == partition.Acquired }) {
		t.Fatalf("m0 alone: state %v, held %v", m0.State(), m0.Held())
	}
	m1 := join(t, w, p, 1)
	w.Settle(func() bool { return false }) // every timer fired: the division made, b draining
	if len(m0.Held()) != 2 || m0.State() != partition.Allocating || len(m1.Held()) != 0 {
		t.Fatalf("m0 %v holding %v, m1 holding %v; want m0 allocating with a and b (b draining), m1 nothing", m0.State(), m0.Held(), m1.Held())
	}
	ha, _ := m0.Hold("a")
	if err := w.Server.AdminDelete(w.ServerPath(ha.Path)); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { _, ok := m0.Hold("a"); return !ok }) {
		t.Fatal("m0 never saw its lock node of a deleted")
	}
	if st, held := m0.State(), m0.Held(); st == partition.Acquired {
		t.Fatalf("m0 reports %v holding %v: its assignment is [a]", st, held)
	}
}

// PROTOCOL.md, step 6: "Deleted or written by someone else: the hold is
// lost (reported in Released), and the item is tried again after Stable
// if it is still in the share", and the package doc's liveness: once
// the party is stable "each member takes its share within Stable ... so
// every item is held". Someone writes the member's lock node (an
// operator, another client): the member drops the hold but leaves its
// node, which is still the lowest contender, so its next attempt waits
// behind its own old node for as long as its session lives.
func TestAdvLockNodeWrittenBySomeoneElse(t *testing.T) {
	w := newWorld(t, 1, 2)
	p, err := partition.New("/written", []string{"x"}, partition.WithStable(stable))
	if err != nil {
		t.Fatal(err)
	}
	m := join(t, w, p, 0)
	if !w.Settle(func() bool { _, ok := m.Hold("x"); return ok && m.State() == partition.Acquired }) {
		t.Fatalf("state %v, held %v", m.State(), m.Held())
	}
	old, _ := m.Hold("x")
	if _, err := sim.Run(w, 1, task.Set(old.Path, []byte("touched"), task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { h, ok := m.Hold("x"); return ok && h.Path != old.Path && m.State() == partition.Acquired }) {
		t.Fatalf("after its lock node was written: state %v, held %v; lock nodes %v (the old one still the lowest)",
			m.State(), m.Held(), w.Children(p.ItemDir("x")))
	}
}

package partition_test

import (
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

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

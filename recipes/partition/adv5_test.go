package partition_test

import (
	"fmt"
	"slices"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// Adversarial tests, round 5: promises of the package docs checked
// literally under schedules chosen to break them.

// gateDrain is a WithDrain task that ends when /gate is created.
func gateDrain(partition.Hold) task.Task[task.Unit] {
	return c.Then(task.ExistsW("/gate"), func(sw task.StatWatch) task.Task[task.Unit] {
		if sw.Stat != nil {
			return task.Value(task.Unit{})
		}
		return c.Map(sw.Watch.Wait(), func(task.Event) task.Unit { return task.Unit{} })
	})
}

// The package doc: kazoo's RELEASE step "is the member's own: it gives
// up what the new division moved elsewhere once the party is stable,
// after running its WithDrain task for each item, and keeps the rest";
// State Acquired: "the party has been unchanged for Stable and the member
// holds every item of its assignment, and nothing else".
//
// m0 alone holds a and b. m1 joins: b is m1's, and m0 drains it (a drain
// that waits for /gate). m1 leaves before the drain ends: b is m0's
// again, m0 still holds it, and m0 reports Acquired with a and b. Then
// the drain ends, and with the party unchanged and b in m0's share, m0
// gives b up (Released [b]) and takes it again under a new token: a
// caller that Wait handed the hold of b, working on it, has it taken away
// by a division that did not move it.
func TestAdv5DrainOfItemAssignedBack(t *testing.T) {
	w := newWorld(t, 1, 2)
	p, err := partition.New("/back", []string{"a", "b"}, partition.WithStable(stable), partition.WithDrain(gateDrain))
	if err != nil {
		t.Fatal(err)
	}
	var changes []partition.Change
	m0, err := sim.Run(w, 0, p.Join("m0", func(ch partition.Change) { changes = append(changes, ch) }))
	if err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return len(m0.Held()) == 2 && m0.State() == partition.Acquired }) {
		t.Fatalf("m0 alone: state %v, held %v", m0.State(), m0.Held())
	}
	m1 := join(t, w, p, 1)
	w.Settle(func() bool { return false }) // the division made: b draining
	if len(m0.Held()) != 2 || m0.State() != partition.Allocating {
		t.Fatalf("m0 %v holding %v; want allocating, b draining", m0.State(), m0.Held())
	}
	left := len(changes)
	if _, err := sim.Run(w, 1, m1.Leave()); err != nil {
		t.Fatal(err)
	}
	w.Settle(func() bool { return false }) // m0 alone again, past Stable
	if _, err := sim.Run(w, 0, task.Create("/gate", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	w.Settle(func() bool { return false }) // the drain has ended
	if st, held := m0.State(), m0.Held(); st != partition.Acquired || len(held) != 2 {
		t.Fatalf("m0 alone at the end: %v holding %v, want acquired with a and b", st, held)
	}
	// From m0's first Acquired after m1 left, with the party unchanged
	// since, b (in m0's share) must not be given up.
	acquired := -1
	for i, ch := range changes[left:] {
		if acquired < 0 && ch.State == partition.Acquired {
			acquired = i
			continue
		}
		if acquired >= 0 && slices.Contains(ch.Released, "b") {
			t.Fatalf("m0 reported Acquired holding b (its share, the party unchanged), then gave b up as the drain begun for m1 ended: changes since m1 left: %v",
				fmtChanges(changes[left:]))
		}
	}
}

func fmtChanges(chs []partition.Change) string {
	s := ""
	for _, ch := range chs {
		s += fmt.Sprintf("[%v +%v -%v] ", ch.State, ch.Acquired, ch.Released)
	}
	return s
}

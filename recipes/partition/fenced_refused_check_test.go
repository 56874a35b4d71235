package partition_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// ErrLost "wraps the end of a hold the member did not choose: its lock
// node deleted or changed by someone else, or its session ended";
// Client.Fenced fails with "an error wrapping ErrLost if the hold ended
// before the write was applied"; a Change's Released lists the items
// "given up, or lost"; Acquired: the member "holds every item of its
// assignment". So once a fenced write has failed with ErrLost, the hold
// it was fenced by has ended: the member reports the item released, and
// takes it again (it is still its share) under a new hold.
//
// Schedule: m0 holds a; an operator takes READ from m0's lock node (its
// ACL changed: the node is not deleted nor written). A write through
// Client.Fenced fails with ErrLost (the check refused, NoAuth). On the
// code before, m0 went on reporting a held under the same hold, Acquired,
// with no Change: Wait handed that hold out again, and every write
// through it, or through Fenced, failed with ErrLost, for as long as the
// session lived (nobody else could take a meanwhile). The fence's answer
// and the member's state now agree: a check the server refuses ends the
// hold, as a node deleted or written does (the lock recipe's Held.Fenced
// does the same), its node is deleted and the item taken again (canary
// partition/lost-keeps-hold).
func TestFencedWriteLostEndsTheHold(t *testing.T) {
	canarytest.Both(t, "partition/lost-keeps-hold", fencedWriteLostEndsTheHold)
}

func fencedWriteLostEndsTheHold(t *testing.T, bug bool) {
	w := newWorld(t, 1, 1)
	cl, err := partition.NewClient(w.Execs[0], "/fr", []string{"a"}, partition.WithStable(stable))
	if err != nil {
		t.Fatal(err)
	}
	var changes []partition.Change
	m0, err := sim.Run(w, 0, cl.Partitioner().Join("m0", func(ch partition.Change) { changes = append(changes, ch) }))
	if err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return m0.State() == partition.Acquired && len(m0.Held()) == 1 }) {
		t.Fatalf("m0 %v holding %v", m0.State(), heldItems(m0))
	}
	first, _ := m0.Hold("a")
	if err := w.Server.AdminSetACL(w.ServerPath(first.Path), []task.ACL{{Perms: task.PermAdmin, Scheme: "world", ID: "anyone"}}); err != nil {
		t.Fatal(err)
	}
	before := len(changes)
	var ferr error
	done := false
	w.Go(0, func(a *sim.Actor) {
		_, ferr = cl.Fenced(a.Context(), m0, "a", task.CreateOp("/fr-1", nil, task.Persistent))
		done = true
	})
	if !w.Settle(func() bool { return done }) {
		t.Fatal("Fenced never returned")
	}
	if !errors.Is(ferr, partition.ErrLost) {
		t.Fatalf("the write with the lock node closed to reads = %v; want ErrLost (the check refused)", ferr)
	}
	w.Settle(func() bool {
		h, ok := m0.Hold("a")
		return m0.State() == partition.Acquired && ok && h.Token != first.Token
	})
	var released []string
	for _, ch := range changes[before:] {
		released = append(released, ch.Released...)
	}
	h, ok := m0.Hold("a")
	ended := slices.Contains(released, "a") && ok && h.Token != first.Token && m0.State() == partition.Acquired
	if bug {
		if ended {
			t.Fatalf("with the canary on, m0 still ended the hold: changes %v", fmtChanges(changes[before:]))
		}
		return
	}
	if !ended {
		t.Fatalf("after a fenced write failed with ErrLost (%v): m0 %v holding a %v under token %d (the write's hold: %d), changes since %v; "+
			"want the hold ended (a released) and a held again under a new hold",
			ferr, m0.State(), ok, h.Token, first.Token, fmtChanges(changes[before:]))
	}
	done = false
	w.Go(0, func(a *sim.Actor) {
		_, ferr = cl.Fenced(a.Context(), m0, "a", task.CreateOp("/fr-2", nil, task.Persistent))
		done = true
	})
	if !w.Settle(func() bool { return done }) || ferr != nil {
		t.Fatalf("a write under the new hold = %v (done %v)", ferr, done)
	}
	if _, err := sim.Run(w, 0, first.Fenced(task.CreateOp("/fr-late", nil, task.Persistent))); !errors.Is(err, partition.ErrLost) {
		t.Fatalf("a write with the ended hold = %v; want ErrLost", err)
	}
}

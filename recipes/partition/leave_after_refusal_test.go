package partition_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// Member.Leave: a delete "an operator's ACL refused fails Leave with
// that refusal while it goes on in the background ... Leave is
// idempotent: a later Leave succeeds once the deletes the first started
// are done". So a caller told of the refusal calls Leave again to learn
// when its member is gone.
//
// Schedule: m0 holds a; an operator closes a's lock directory to deletes.
// Leave fails with the refusal (NoAuth), the delete going on in the
// background. The operator opens the directory again and the background
// delete removes m0's lock node: the deletes the Leave started are done,
// nothing of m0 is left on the server. On the code before, every later
// Leave still failed with the first refusal (the give-up's outcome, kept
// for good), through the task face as through the Client, so the caller
// could never learn that the member was gone.
func TestLeaveSucceedsOnceARefusedDeleteIsDone(t *testing.T) {
	w := newWorld(t, 1, 2)
	cl, err := partition.NewClient(w.Execs[0], "/rl", []string{"a"}, partition.WithStable(stable))
	if err != nil {
		t.Fatal(err)
	}
	p := cl.Partitioner()
	m0 := join(t, w, p, 0)
	if !w.Settle(func() bool { return m0.State() == partition.Acquired && len(m0.Held()) == 1 }) {
		t.Fatalf("m0 %v holding %v", m0.State(), heldItems(m0))
	}
	noDelete := []task.ACL{{Perms: task.PermRead | task.PermCreate | task.PermAdmin, Scheme: "world", ID: "anyone"}}
	if err := w.Server.AdminSetACL(w.ServerPath(p.ItemDir("a")), noDelete); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, m0.Leave()); !errors.Is(err, task.ErrNoAuth) {
		t.Fatalf("Leave with the lock directory closed to deletes = %v, want the refusal (NoAuth)", err)
	}
	if err := w.Server.AdminSetACL(w.ServerPath(p.ItemDir("a")), task.OpenACL); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return len(memberNodes(w, p, "m0")) == 0 }) {
		t.Fatalf("the refused delete never went on: m0's nodes %v", memberNodes(w, p, "m0"))
	}
	// A member that takes a shows the item is free again.
	m1 := join(t, w, p, 1)
	if !w.Settle(func() bool { return m1.State() == partition.Acquired && len(m1.Held()) == 1 }) {
		t.Fatalf("m1 %v holding %v", m1.State(), heldItems(m1))
	}
	if _, err := sim.Run(w, 0, m0.Leave()); err != nil {
		t.Errorf("Leave again, the refused delete done and nothing of m0 left (%v) = %v; want success", memberNodes(w, p, "m0"), err)
	}
	var cerr error
	done := false
	w.Go(0, func(a *sim.Actor) { cerr = cl.Leave(a.Context(), m0); done = true })
	if !w.Settle(func() bool { return done }) || cerr != nil {
		t.Errorf("Client.Leave again, the refused delete done = %v (returned %v); want success", cerr, done)
	}
}

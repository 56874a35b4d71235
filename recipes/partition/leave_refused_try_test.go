package partition_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// PROTOCOL.md, step 8: "A member that ends on an error no retry settles
// ... gives its lock nodes and party node up the same way ..., and a
// Leave after it waits for that".
//
// Schedule: m0 holds item a (an Assign that gives a to everyone); an
// operator closes m0's lock node to everyone; m1 joins and queues behind
// it, and its read of the node below its own is refused: m1 ends with
// NoAuth, its lock node in a's queue. Its user gives it back with Leave
// at once.
// On the code before, the try that failed was no longer counted when the
// member ended (its node left to the try's own clean-up, in the
// background), so the give-up deleted the party node only and the Leave
// succeeded with m1's lock node still on the server (the sim scenario's
// judge of each successful Leave, seed 43100003). A try's node is now
// counted until its clean-up ends (canary
// partition/leave-leaves-failed-try).
func TestLeaveAfterARefusedTryDeletesItsNode(t *testing.T) {
	canarytest.Both(t, "partition/leave-leaves-failed-try", leaveAfterRefusedTry)
}

func leaveAfterRefusedTry(t *testing.T, bug bool) {
	w := newWorld(t, 1, 2)
	p, err := partition.New("/w4", []string{"a"}, partition.WithStable(stable),
		partition.WithAssign(func(string, []string, []string) []string { return []string{"a"} }))
	if err != nil {
		t.Fatal(err)
	}
	m0 := join(t, w, p, 0)
	if !w.Settle(func() bool { return m0.State() == partition.Acquired && len(m0.Held()) == 1 }) {
		t.Fatal("m0 never acquired")
	}
	h, _ := m0.Hold("a")
	if err := w.Server.AdminSetACL(w.ServerPath(h.Path), []task.ACL{{Perms: task.PermAdmin, Scheme: "world", ID: "anyone"}}); err != nil {
		t.Fatal(err)
	}
	// m1's user gives it back as soon as it ends (in its Change callback,
	// as the simulation's members do).
	var m1 *partition.Member
	var leave *looked
	on := func(ch partition.Change) {
		if ch.State == partition.Ended && leave == nil {
			leave = submitLooking(w, 1, m1.Leave(), func() []string { return memberNodes(w, p, "m1") })
		}
	}
	m1, err = sim.Run(w, 1, p.Join("m1", on))
	if err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return leave != nil && leave.done }) {
		t.Fatalf("m1 did not end, or its Leave did not return: state %v, nodes %v", m1.State(), memberNodes(w, p, "m1"))
	}
	if !errors.Is(m1.Err(), task.ErrNoAuth) {
		t.Fatalf("m1 ended with %v; want NoAuth", m1.Err())
	}
	w.Settle(func() bool { return leave.done })
	if !leave.done || leave.err != nil {
		t.Fatalf("Leave: done %v, err %v", leave.done, leave.err)
	}
	if (len(leave.seen) > 0) != bug {
		t.Fatalf("Leave succeeded with the member's nodes %v on the server (canary %v; after settling: %v)", leave.seen, bug, memberNodes(w, p, "m1"))
	}
}

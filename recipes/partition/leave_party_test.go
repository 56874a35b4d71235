package partition_test

import (
	"strings"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// PROTOCOL.md, step 8: "for each held item ... its lock node is deleted;
// ... then the party node is deleted; ... Every Leave, the first and any
// later one, succeeds once these deletes are done". Member.Leave: "it
// gives up every item (deleting its lock nodes ...) and leaves the party
// (deleting its node)".
//
// Schedules, the member cut off with a create of its party node applied
// and its reply lost (it does not know the node's name yet), and Leave
// run then (it starts once the member is back):
//
//   - first: the member's first party node;
//   - again: an operator deleted the member's party node, and its
//     keeper's create of a new one is the one cut (meanwhile the party
//     showed the member gone for Stable, so it gave its item up).
//
// On the code before, Leave deleted the party node the member knew of
// and succeeded with the node of the create in flight still on the
// server: the others counted a member that had left, until its clean-up
// in the background deleted it. The give-up now deletes that node too,
// by prefix and owner, as it does a try's lock node (canary
// partition/leave-leaves-party-create).
func TestLeaveDeletesTheNodesOfOperationsInFlight(t *testing.T) {
	for _, c := range []struct {
		name   string
		again  bool
		canary canary.Name
	}{
		{"first", false, "partition/leave-leaves-party-create"},
		{"again", true, "partition/leave-leaves-party-create"},
	} {
		t.Run(c.name, func(t *testing.T) {
			canarytest.Both(t, c.canary, func(t *testing.T, bug bool) { leaveDeletesNodesInFlight(t, c.again, bug) })
		})
	}
}

func leaveDeletesNodesInFlight(t *testing.T, again, bug bool) {
	cut := &sim.Cutter{Match: func(req task.Request) bool {
		r, ok := req.(*task.CreateRequest)
		return ok && strings.HasPrefix(r.Path, "/w3/party/")
	}, Applied: true}
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: func(i int, conn *fakezk.Conn) task.Conn {
		if i == 0 {
			return cut.Wrap(conn)
		}
		return conn
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	cut.World = w
	p, err := partition.New("/w3", []string{"a"}, partition.WithStable(stable))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 1, zkops.EnsurePath("/w3/party", nil)); err != nil {
		t.Fatal(err)
	}
	cut.Armed = !again
	m0 := join(t, w, p, 0)
	if again {
		if !w.Settle(func() bool { return m0.State() == partition.Acquired && len(m0.Held()) == 1 }) {
			t.Fatal("m0 never acquired")
		}
		cut.Armed = true
		for _, n := range memberNodes(w, p, "m0") {
			if strings.HasPrefix(n, "/w3/party/") {
				if _, err := sim.Run(w, 1, task.Delete(n, task.AnyVersion)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if !w.Settle(func() bool { return cut.Cut }) {
		t.Fatal("the party node's create was never sent")
	}
	if len(memberNodes(w, p, "m0")) == 0 {
		t.Fatal("the party node's create was not applied: the test shows nothing")
	}
	leave := submitLooking(w, 0, m0.Leave(), func() []string { return memberNodes(w, p, "m0") })
	w.Settle(func() bool { return leave.done })
	if !leave.done || leave.err != nil {
		t.Fatalf("Leave: done %v, err %v", leave.done, leave.err)
	}
	if (len(leave.seen) > 0) != bug {
		t.Fatalf("Leave succeeded with the member's nodes %v on the server (canary %v; after settling: %v)", leave.seen, bug, memberNodes(w, p, "m0"))
	}
	w.Settle(func() bool { return false })
	if left := memberNodes(w, p, "m0"); len(left) > 0 {
		t.Fatalf("nodes left after settling: %v", left)
	}
}

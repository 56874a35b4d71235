package partition_test

import (
	"strings"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// memberNodes lists the nodes on the server under p's party and item
// directories whose data or name belongs to the member with identifier id
// (party nodes end in -id; lock nodes hold id as data).
func memberNodes(w *sim.World, p *partition.Partitioner, id string) []string {
	var out []string
	for _, n := range w.Children(p.Path() + "/party") {
		if strings.HasSuffix(n, "-"+id) {
			out = append(out, p.Path()+"/party/"+n)
		}
	}
	for _, it := range p.Items() {
		for _, n := range w.Children(p.ItemDir(it)) {
			path := p.ItemDir(it) + "/" + n
			if d, _, ok := w.NodeData(path); ok && string(d) == id {
				out = append(out, path)
			}
		}
	}
	return out
}

// PROTOCOL.md, step 8: "Leave: the member ends ...; for each held item
// Drain runs, then its lock node is deleted; then the party node is
// deleted; ... Every Leave, the first and any later one, succeeds once
// these deletes are done". Member.Leave: "it gives up every item
// (deleting its lock nodes, so the next contenders hold at once) and
// leaves the party (deleting its node)".
//
// Schedule: m1 waits in item a's queue behind m0's hold (an Assign that
// gives a to everyone); m1 Leaves. The Leave succeeds while m1's lock
// node (its attempt) was still on the server: the attempt's clean-up is a
// deferred flow of its own (Scope.Defer in acquire) that Leave did not
// wait for, unlike the held items' and party node's deletes. The give-up
// now deletes the tries' nodes too (canary partition/leave-leaves-attempt).
func TestLeaveWhileAcquiringDeletesTheAttemptNode(t *testing.T) {
	canarytest.Both(t, "partition/leave-leaves-attempt", func(t *testing.T, bug bool) { leaveWhileAcquiring(t, bug) })
}

func leaveWhileAcquiring(t *testing.T, bug bool) {
	w := newWorld(t, 1, 2)
	p, err := partition.New("/w2", []string{"a"}, partition.WithStable(stable),
		partition.WithAssign(func(string, []string, []string) []string { return []string{"a"} }))
	if err != nil {
		t.Fatal(err)
	}
	m0 := join(t, w, p, 0)
	if !w.Settle(func() bool { return m0.State() == partition.Acquired && len(m0.Held()) == 1 }) {
		t.Fatal("m0 never acquired")
	}
	m1 := join(t, w, p, 1)
	// m1 wants a too (its Assign gives every member a): it waits behind m0.
	if !w.Settle(func() bool { return len(memberNodes(w, p, "m1")) == 2 }) {
		t.Fatalf("m1 never queued: %v", memberNodes(w, p, "m1"))
	}
	leave := submitLooking(w, 1, m1.Leave(), func() []string { return memberNodes(w, p, "m1") })
	w.Settle(func() bool { return leave.done })
	if !leave.done || leave.err != nil {
		t.Fatalf("Leave: done %v, err %v", leave.done, leave.err)
	}
	if (len(leave.seen) > 0) != bug {
		t.Fatalf("Leave succeeded with the member's nodes %v on the server (canary %v; after settling: %v)", leave.seen, bug, memberNodes(w, p, "m1"))
	}
}

// looked is the outcome of a flow and what look saw on the server at the
// instant its outcome was delivered (in its continuation, on the
// executor goroutine).
type looked struct {
	done bool
	err  error
	seen []string
}

func submitLooking[T any](w *sim.World, i int, t task.Task[T], look func() []string) *looked {
	l := &looked{}
	executor.Submit(w.Execs[i], t, func(_ T, err error) { l.done, l.err, l.seen = true, err, look() })
	return l
}

package partition_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/partition"
)

// WithDrain's doc, on a Leave: the member ends at once (its last report
// says every item released, Held is empty), the drains run with their own
// Holds, and each item's lock node is deleted only once its drain has
// ended, so that no other member holds the item meanwhile; Leave ends
// after the deletes. (The doc said the items stayed reported held during
// a Leave's drains, which the member, ended, never did.)
func TestLeaveReleasesAtOnceAndKeepsTheNodesWhileDraining(t *testing.T) {
	w := newWorld(t, 1, 2)
	p, err := partition.New("/drain", []string{"a", "b"}, partition.WithStable(stable), partition.WithDrain(gateDrain))
	if err != nil {
		t.Fatal(err)
	}
	var changes []partition.Change
	m0, err := sim.Run(w, 0, p.Join("m0", func(ch partition.Change) { changes = append(changes, ch) }))
	if err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return len(m0.Held()) == 2 && m0.State() == partition.Acquired }) {
		t.Fatalf("m0: state %v, held %v", m0.State(), m0.Held())
	}
	before := len(changes)
	leave := sim.Submit(w, 0, m0.Leave())
	m1 := join(t, w, p, 1)                 // a member that would take the items once their nodes go
	w.Settle(func() bool { return false }) // the drains wait for /gate
	if leave.Done {
		t.Fatalf("Leave ended before the drains: %v", leave.Err)
	}
	var released []string
	for _, ch := range changes[before:] {
		released = append(released, ch.Released...)
	}
	slices.Sort(released)
	if !slices.Equal(released, []string{"a", "b"}) || len(m0.Held()) != 0 || m0.State() != partition.Ended {
		t.Fatalf("m0 left: reported %v, Held %v, state %v; want a and b released at once, the member ended", fmtChanges(changes[before:]), m0.Held(), m0.State())
	}
	locks := 0
	for _, n := range memberNodes(w, p, "m0") {
		for _, it := range p.Items() {
			if strings.HasPrefix(n, p.ItemDir(it)+"/") {
				locks++
			}
		}
	}
	if locks < 2 {
		t.Fatalf("m0's nodes while its drains run: %v; want its two lock nodes still there", memberNodes(w, p, "m0"))
	}
	if h := m1.Held(); len(h) != 0 {
		t.Fatalf("m1 holds %v while m0's drains run", h)
	}
	if err := w.Server.AdminCreate("/gate", nil, 0); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return leave.Done && len(m1.Held()) == 2 }) {
		t.Fatalf("after the drains: Leave done %v (%v), m1 holds %v", leave.Done, leave.Err, m1.Held())
	}
	if leave.Err != nil {
		t.Fatal(leave.Err)
	}
}

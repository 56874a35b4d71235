package partition_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// Client.FencedHold: "A Hold m did not hand out (another member's,
// another process's, or one made by hand) is refused with an error
// wrapping task.ErrInvalidArgument, nothing sent: its fence would let the
// write in while someone else holds the item", so that "a write made for
// h ... is never applied under another hold". A Hold is a struct of
// exported fields: a copy of one m handed out whose Item or Path the
// caller changed is a hold made by hand as much as a zero Hold filled in.
//
// Schedule: m0 (client 0) holds a, m1 (client 1) holds b. The caller takes
// m0's hold of a and sets its Item, Path and Version (and Token) to m1's
// hold of b, or only its Path and Version, and writes with FencedHold
// through m0. The write was applied, while m1 held b: FencedHold checked
// only that the Hold's hidden life was m0's, and the fence then checked
// m1's lock node.
func TestFencedHoldRefusesAHandedOutHoldChangedByHand(t *testing.T) {
	for _, tc := range []struct {
		name     string
		keepItem bool
	}{{"item and node", false}, {"node only", true}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 1, 2)
			cl, err := partition.NewClient(w.Execs[0], "/rn", []string{"a", "b"}, partition.WithStable(stable))
			if err != nil {
				t.Fatal(err)
			}
			m0, err := sim.Run(w, 0, cl.Partitioner().Join("m0", nil))
			if err != nil {
				t.Fatal(err)
			}
			m1, err := sim.Run(w, 1, cl.Partitioner().Join("m1", nil))
			if err != nil {
				t.Fatal(err)
			}
			if !w.Settle(func() bool {
				return m0.State() == partition.Acquired && m1.State() == partition.Acquired && len(m0.Held()) == 1 && len(m1.Held()) == 1
			}) {
				t.Fatalf("m0 %v holding %v, m1 %v holding %v", m0.State(), heldItems(m0), m1.State(), heldItems(m1))
			}
			ha, ok := m0.Hold("a")
			if !ok {
				t.Fatalf("m0 holds %v, not a", heldItems(m0))
			}
			hb, ok := m1.Hold("b")
			if !ok {
				t.Fatalf("m1 holds %v, not b", heldItems(m1))
			}
			forged := ha
			forged.Path, forged.Version = hb.Path, hb.Version
			if !tc.keepItem {
				forged.Item, forged.Token = hb.Item, hb.Token
			}
			var ferr error
			done := false
			w.Go(0, func(a *sim.Actor) {
				_, ferr = cl.FencedHold(a.Context(), m0, forged, task.CreateOp("/forged", nil, task.Persistent))
				done = true
			})
			if !w.Settle(func() bool { return done }) {
				t.Fatal("FencedHold never returned")
			}
			_, _, applied := w.NodeData("/forged")
			if applied || !errors.Is(ferr, task.ErrInvalidArgument) {
				t.Fatalf("FencedHold through m0 with its hold of a changed to m1's lock node of b (m1 holding b: %v): err %v, applied %v; "+
					"want refused with task.ErrInvalidArgument, nothing sent", heldItems(m1), ferr, applied)
			}
			// m0's own hold, unchanged, still passes.
			done = false
			w.Go(0, func(a *sim.Actor) {
				_, ferr = cl.FencedHold(a.Context(), m0, ha, task.CreateOp("/own", nil, task.Persistent))
				done = true
			})
			if !w.Settle(func() bool { return done }) || ferr != nil {
				t.Fatalf("FencedHold with m0's own hold = %v (done %v)", ferr, done)
			}
		})
	}
}

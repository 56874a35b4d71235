package partition_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/recipes/partition"
)

// State Allocating's doc: "the party changed (or the member has just
// joined, or its session changed) and the member waits for it to be
// stable"; Acquired: "the party has been unchanged for Stable";
// PROTOCOL.md, step 2: "each time that changes, the state becomes
// Allocating and the stability timer starts again"; Client.Wait blocks
// until the member is Acquired (kazoo's wait_for_acquire).
//
// Schedules, m0 alone and Acquired with every item (its stability timer
// has fired), then at one instant, no time passing:
//
//   - join: m1 joins, and m0 sees the listing with it;
//   - leave: m1 had joined and the two were Acquired with their shares;
//     m1 leaves, and m0 sees the listing without it.
//
// On the code before, listed asked for Allocating before it set the new
// stability timer: the state was computed with no timer pending, the
// division of the old party in force and every item of it held, so it
// came out Acquired again, and nothing was reported. m0 stayed Acquired
// through Stable with the party changed (Wait returned at once: with
// the items the new division moves to m1, or without those it moves to
// m0), and went from Acquired to Acquired, items released or taken,
// never Allocating. (A second change within Stable, with the timer then
// pending, did report Allocating: an operator's delete of the party
// node, the member then registering again, was reported right.)
// With the canary partition/allocating-before-timer, the old order, m0
// stays Acquired.
func TestAllocatingOnceThePartyChanges(t *testing.T) {
	canarytest.Both(t, "partition/allocating-before-timer", func(t *testing.T, bug bool) {
		for _, c := range []string{"join", "leave"} {
			t.Run(c, func(t *testing.T) { allocatingOnce(t, c, bug) })
		}
	})
}

func allocatingOnce(t *testing.T, c string, bug bool) {
	w := newWorld(t, 1, 2)
	p := newSet(t)
	var states []partition.State
	m0, err := sim.Run(w, 0, p.Join("m0", func(ch partition.Change) { states = append(states, ch.State) }))
	if err != nil {
		t.Fatal(err)
	}
	var m1 *partition.Member
	if c == "leave" {
		m1 = join(t, w, p, 1)
	}
	if !w.Settle(func() bool { return balanced([]*partition.Member{m0, m1}) }) {
		t.Fatalf("m0 %v holding %v", m0.State(), heldItems(m0))
	}
	party := w.Children("/work/party")
	states = nil
	switch c {
	case "join":
		if _, err := sim.Run(w, 1, p.Join("m1", nil)); err != nil {
			t.Fatal(err)
		}
	case "leave":
		if _, err := sim.Run(w, 1, m1.Leave()); err != nil {
			t.Fatal(err)
		}
	}
	w.Drive() // no time passes: m0's new stability timer is pending
	if now := w.Children("/work/party"); slices.Equal(now, party) {
		t.Fatalf("the party did not change: %v", now)
	}
	if st := m0.State(); bug {
		if st != partition.Acquired || slices.Contains(states, partition.Allocating) {
			t.Fatalf("with the canary: m0 is %v, reported %v; want Acquired, nothing reported", st, fmt.Sprint(states))
		}
		return
	} else if st != partition.Allocating || !slices.Contains(states, partition.Allocating) {
		t.Fatalf("party %v (was %v): m0 is %v holding %v, reported %v; want Allocating until the party has been unchanged for Stable",
			w.Children("/work/party"), party, st, heldItems(m0), fmt.Sprint(states))
	}
	if !w.Settle(func() bool { return m0.State() == partition.Acquired }) || (c == "leave") != (len(m0.Held()) == len(items)) {
		t.Fatalf("after settling: m0 %v holding %v", m0.State(), heldItems(m0))
	}
}

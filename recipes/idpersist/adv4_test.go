package idpersist_test

import (
	"math"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/seqid"
)

// PROTOCOL.md (many sequences): "A name that was not live (new, or added
// again after removal) whose node holds less than its kept mark is first
// raised to the mark, fenced, before its limit node exists, so a name
// reused after removal never repeats an ID of its earlier life." A
// sequence is removed and added again from 0 before the leader has
// handled the removal (the two changes come between two of its steps,
// as with a leader whose deliveries are late): its flow reads the new
// node, at 0, under the old limit node, and generators hand out the IDs
// of the name's earlier life again.
func TestAdv4SequenceRemovedAndAddedAgainUnseen(t *testing.T) {
	m := newMultiWorld(t, 1, 3)
	r0, r1 := m.replica(0), m.replica(1)
	m.settle(func() bool { return r0.Leading() || r1.Leading() })
	m.create(2, "a", 0)
	m.settle(m.drawNamed(2, "a", 5))
	// An operator resets the sequence: delete it, create it again at 0.
	if err := m.Server.AdminDelete("/all-sequences/a"); err != nil {
		t.Fatal(err)
	}
	if err := m.Server.AdminCreate("/all-sequences/a", seqid.Encode(0), 0); err != nil {
		t.Fatal(err)
	}
	m.settle(m.drawNamed(2, "a", 5)) // drawNamed reports an ID handed out twice
	if t.Failed() {
		t.Logf("ids of a in order: %v (mark %d)", m.order["a"], m.mark("a"))
	}
}

// PROTOCOL.md (leader election): each replica "lists the candidates,
// sorted by sequence number: if it is not the lowest it sets an exists
// watch on the next lower candidate only (no herd) ... If it is the
// lowest ... only then does it lead"; the package doc: "one replica
// leads". Once the election directory's counter has run out, every new
// candidate is named ...2147483647: the sort has ties, broken by the
// order of the listing, which ZooKeeper does not fix (fakezk draws it).
// Two replicas may each take itself for the lowest (two leaders), or
// each the other (each waits on the other's node: no leader at all, and
// generators wait for ever once the limit is reached).
func TestAdv4ElectionAtCounterWrap(t *testing.T) {
	for _, tc := range []struct {
		seed uint64
		what string
	}{{1, "two leaders"}, {7, "no leader"}} {
		t.Run(tc.what, func(t *testing.T) {
			w := newWorld(t, tc.seed, 3, fakezk.Config{})
			for _, p := range []string{"/ids", "/ids/election"} {
				if err := w.Server.AdminCreate(p, nil, 0); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Server.SetCounters("/ids/election", 0, math.MaxInt32); err != nil {
				t.Fatal(err)
			}
			r0, r1 := w.replica(0), w.replica(1)
			for range 50 {
				w.Drive()
				w.Clock.AdvanceToNext()
			}
			if r0.Leading() == r1.Leading() {
				t.Errorf("seed %d: replicas leading %v and %v, want exactly one (candidates %v)",
					tc.seed, r0.Leading(), r1.Leading(), w.Children(w.cfg.Election))
			}
		})
	}
}

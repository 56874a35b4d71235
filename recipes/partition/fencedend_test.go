package partition_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// A write fenced by a hold its member has given up is refused, though
// the hold's node is deleted only after: Fenced checks the hold on the
// member's side before it sends. The schedules: the write submitted
// right after a Leave (the member ended: it holds nothing), and right
// after the member reported the item released to a new member. With the
// write sent anyway (the canary), ZooKeeper applies it: its node is
// still there.
func TestFencedAfterTheHoldEnded(t *testing.T) {
	for _, bug := range []bool{false, true} {
		name := "fixed"
		if bug {
			name = "canary"
		}
		t.Run(name+"/leave", func(t *testing.T) {
			if bug {
				defer canary.Enable("partition/fenced-after-give-up")()
			}
			w := newWorld(t, 1, 1)
			m := join(t, w, newSet(t), 0)
			if !w.Settle(func() bool { return m.State() == partition.Acquired }) {
				t.Fatal("never acquired")
			}
			h := m.Held()[0]
			leave := sim.Submit(w, 0, m.Leave())
			write := sim.Submit(w, 0, h.Fenced(task.CreateOp("/late", nil, task.Persistent)))
			w.Settle(func() bool { return leave.Done && write.Done })
			checkLate(t, w, bug, write.Err, "after Leave")
		})
		t.Run(name+"/rebalance", func(t *testing.T) {
			if bug {
				defer canary.Enable("partition/fenced-after-give-up")()
			}
			w := newWorld(t, 1, 2)
			p := newSet(t)
			var given []partition.Hold
			var write *sim.Outcome[[]task.MultiResult]
			m0, err := sim.Run(w, 0, p.Join("m0", func(ch partition.Change) {
				if len(ch.Released) == 0 || write != nil {
					return
				}
				// Reported released: the hold has ended. Its node goes
				// in the background, after this write is submitted.
				for _, h := range given {
					if h.Item == ch.Released[0] {
						write = sim.Submit(w, 0, h.Fenced(task.CreateOp("/late", nil, task.Persistent)))
					}
				}
			}))
			if err != nil {
				t.Fatal(err)
			}
			if !w.Settle(func() bool { return m0.State() == partition.Acquired }) {
				t.Fatal("never acquired")
			}
			given = m0.Held()
			join(t, w, p, 1)
			if !w.Settle(func() bool { return write != nil && write.Done }) {
				t.Fatal("m0 never gave an item up")
			}
			checkLate(t, w, bug, write.Err, "after the member reported it released")
		})
	}
}

func checkLate(t *testing.T, w *sim.World, bug bool, err error, when string) {
	t.Helper()
	_, _, applied := w.NodeData("/late")
	switch {
	case !bug && (applied || !errors.Is(err, partition.ErrLost)):
		t.Errorf("a write fenced by a hold %s: applied %v, err %v; want refused with ErrLost", when, applied, err)
	case bug && !applied:
		t.Errorf("with the write sent anyway, the node was gone already (err %v): the test would not see the bug", err)
	}
}

package partition_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// A drain under faults. WithDrain: "An item lost (its node gone, its
// session ended) is not drained: it is no longer held", and Hold.Fenced:
// writes "are refused once the hold has ended, however late"; the
// package doc: "one that expires loses them with its session, and the
// others take them once the party shows it gone. A member stays in the
// party across session expiries."
//
// Schedule: m0 holds a and b; m1 joins and m0 drains b (a drain that
// waits for /gate); m0's session expires. The drain's Hold is refused,
// m1 takes b, m0 joins again on its new session and takes a; the drain,
// released once /gate is made, changes nothing.
func TestSessionExpiresDuringARebalanceDrain(t *testing.T) {
	w := newWorld(t, 1, 2)
	var drained []partition.Hold
	p, err := partition.New("/dx", []string{"a", "b"}, partition.WithStable(stable), partition.WithDrain(func(h partition.Hold) task.Task[task.Unit] {
		drained = append(drained, h)
		return gateDrain(h)
	}))
	if err != nil {
		t.Fatal(err)
	}
	m0 := join(t, w, p, 0)
	if !w.Settle(func() bool { return m0.State() == partition.Acquired && len(m0.Held()) == 2 }) {
		t.Fatalf("m0 %v holding %v", m0.State(), heldItems(m0))
	}
	m1 := join(t, w, p, 1)
	if !w.Settle(func() bool { return len(drained) == 1 }) || drained[0].Item != "b" {
		t.Fatalf("drains begun: %v", drained)
	}
	w.Server.Expire(w.Conns[0])
	settled := func() bool {
		return m0.State() == partition.Acquired && m1.State() == partition.Acquired &&
			slices.Equal(heldItems(m0), []string{"a"}) && slices.Equal(heldItems(m1), []string{"b"})
	}
	if !w.Settle(settled) {
		t.Fatalf("after m0's session expired in b's drain: m0 %v holding %v, m1 %v holding %v", m0.State(), heldItems(m0), m1.State(), heldItems(m1))
	}
	_, err = sim.Run(w, 0, drained[0].Fenced(task.CreateOp("/late", nil, task.Persistent)))
	if _, _, applied := w.NodeData("/late"); applied || !errors.Is(err, partition.ErrLost) {
		t.Fatalf("a write with the drain's Hold after the session ended: err %v, applied %v; want ErrLost", err, applied)
	}
	if err := w.Server.AdminCreate("/gate", nil, 0); err != nil {
		t.Fatal(err)
	}
	w.Settle(func() bool { return false })
	if !settled() {
		t.Fatalf("once the old drain ended: m0 %v holding %v, m1 %v holding %v", m0.State(), heldItems(m0), m1.State(), heldItems(m1))
	}
}

// A Leave's drain under faults, the Leave started with a ctx that had
// ended (`defer c.Leave(ctx, m)`: it goes on in the background). The
// drain's Hold is good until the drain ends while its node stands
// (WithDrain: "the drain runs with its own Hold, valid until it ends"),
// refused once its node is gone (the session expired, an operator
// deleted it); whatever happens, once the drains end the other member
// holds every item, a later Leave succeeds, and no node of the member
// is left.
func TestFaultsDuringALeavesDrain(t *testing.T) {
	for _, fault := range []string{"session expires", "operator deletes the party node", "operator deletes the lock node"} {
		t.Run(fault, func(t *testing.T) {
			w := newWorld(t, 1, 2)
			var drained []partition.Hold
			cl, err := partition.NewClient(w.Execs[0], "/dl", []string{"a", "b"}, partition.WithStable(stable), partition.WithDrain(func(h partition.Hold) task.Task[task.Unit] {
				drained = append(drained, h)
				return gateDrain(h)
			}))
			if err != nil {
				t.Fatal(err)
			}
			p := cl.Partitioner()
			m0 := join(t, w, p, 0)
			if !w.Settle(func() bool { return m0.State() == partition.Acquired && len(m0.Held()) == 2 }) {
				t.Fatalf("m0 %v holding %v", m0.State(), heldItems(m0))
			}
			var first error
			done := false
			w.Go(0, func(a *sim.Actor) {
				ctx, cancel := a.WithCancel(a.Context())
				cancel()
				first = cl.Leave(ctx, m0)
				done = true
			})
			if !w.Settle(func() bool { return done && len(drained) == 1 }) || !errors.Is(first, context.Canceled) {
				t.Fatalf("Leave with an ended ctx: %v (done %v), drains begun %v", first, done, drained)
			}
			m1 := join(t, w, p, 1)
			w.Settle(func() bool { return false })
			wantRefused := true
			switch fault {
			case "session expires":
				w.Server.Expire(w.Conns[0])
			case "operator deletes the party node":
				wantRefused = false // the lock node stands: the drain still holds a
				for _, n := range memberNodes(w, p, "m0") {
					if strings.HasPrefix(n, "/dl/party/") {
						if err := w.Server.AdminDelete(w.ServerPath(n)); err != nil {
							t.Fatal(err)
						}
					}
				}
			case "operator deletes the lock node":
				if err := w.Server.AdminDelete(w.ServerPath(drained[0].Path)); err != nil {
					t.Fatal(err)
				}
			}
			w.Settle(func() bool { return false })
			if !wantRefused && len(m1.Held()) != 0 {
				t.Fatalf("m1 holds %v while m0's drain of a holds it", heldItems(m1))
			}
			_, err = sim.Run(w, 0, drained[0].Fenced(task.CreateOp("/late", nil, task.Persistent)))
			_, _, applied := w.NodeData("/late")
			if wantRefused && (applied || !errors.Is(err, partition.ErrLost)) {
				t.Fatalf("a write with the drain's Hold, its node gone: err %v, applied %v; want ErrLost", err, applied)
			}
			if !wantRefused && (!applied || err != nil) {
				t.Fatalf("a write with the drain's Hold, its node there, the drain running: err %v, applied %v; want applied", err, applied)
			}
			if err := w.Server.AdminCreate("/gate", nil, 0); err != nil {
				t.Fatal(err)
			}
			var second error
			done = false
			w.Go(0, func(a *sim.Actor) { second = cl.Leave(a.Context(), m0); done = true })
			if !w.Settle(func() bool {
				return done && m1.State() == partition.Acquired && len(m1.Held()) == 2 && len(memberNodes(w, p, "m0")) == 0
			}) || second != nil {
				t.Fatalf("after the drains: second Leave %v (done %v), m1 %v holding %v, m0's nodes %v",
					second, done, m1.State(), heldItems(m1), memberNodes(w, p, "m0"))
			}
		})
	}
}

package queue_test

import (
	"context"

	"errors"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/queue"
)

// Item.Ack's doc: "An Ack of an Item whose ack was applied already (by an
// earlier Ack, or one running at the same time, on this executor) says so
// too: nil", and ErrDeliveryLost is "not applied". An Ack whose multi is
// applied and whose reply is lost, and a second Ack of the same Item (a
// caller retrying after Client.Ack returned as its context ended, the
// first going on in the background) sent after the reconnect: the second
// finds the copy gone before the first has settled. It must not report
// ErrDeliveryLost (the item was acknowledged, and never comes back).
func TestAckBesideAnAckWhoseReplyWasLost(t *testing.T) {
	w := newFaultWorld(t, 2)
	const a, b = 0, 1
	qa := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	qb := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	for _, d := range []string{"x", "y"} {
		if _, err := mustRun(t, w.World, b, qb.Put([]byte(d))); err != nil {
			t.Fatal(err)
		}
	}
	it, err := mustRun(t, w.World, a, qa.Take())
	if err != nil {
		t.Fatal(err)
	}
	hit := w.cutAfter(w.Conns[a], true, isMulti)
	first := sim.Submit(w.World, a, it.Ack())
	w.Drive()
	if !*hit || first.Done {
		t.Fatalf("the ack was not cut off: %v %+v", *hit, first)
	}
	second := sim.Submit(w.World, a, it.Ack())
	w.heal()
	if !w.Settle(func() bool { return first.Done && second.Done }) {
		t.Fatal("the acks never ended")
	}
	if first.Err != nil {
		t.Fatalf("the ack whose reply was lost: %v, want nil (applied)", first.Err)
	}
	if second.Err != nil {
		t.Fatalf("the second ack of an item acknowledged: %v, want nil (ErrDeliveryLost says not applied: %v)",
			second.Err, errors.Is(second.Err, queue.ErrDeliveryLost))
	}
	if got := w.Children("/q.inflight"); len(got) != 0 {
		t.Fatalf("in flight after the acks: %v", got)
	}
	// The consumer is still registered: its next take goes on under its
	// marker, and no second marker of its session appears.
	it2, err := mustRun(t, w.World, a, qa.Take())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w.World, a, it2.Ack()); err != nil {
		t.Fatal(err)
	}
	if m := w.Children("/q.consumers"); len(m) != 1 {
		t.Fatalf("markers: %v, want the one consumer's", m)
	}
}

// doc.go: "Put: ErrDataTooLarge for data the queue's larger requests with
// the item could not carry (a few hundred bytes under the connection's
// packet limit, its root counted)", and at least once "No item whose Put
// succeeded is lost". A server (and its Conn) configured with limits
// above the defaults (fakezk.Config.MaxDataSize and MaxPacketSize,
// zkadapter.Config's, up to 1 GiB): checkSize left data of
// task.MaxDataSize or more to the create, as if the create always refused
// it, so Put accepted an item of 2 MiB less a few bytes that the take's
// move could never carry, and every Take failed at it (the small item
// behind it never taken).
func TestLargestPutUnderALargerPacketLimitIsTaken(t *testing.T) {
	const limit = 2 << 20
	srv := fakezk.New(fakezk.Config{Async: true, MaxDataSize: limit, MaxPacketSize: limit})
	defer srv.Close()
	c := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(queue.AtLeastOnce))
	bg := context.Background()
	lo, hi := 1, limit
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		name, err := c.Put(bg, make([]byte, mid))
		switch {
		case err == nil:
			lo = mid
			if err := srv.AdminDelete("/q/" + name); err != nil {
				t.Fatal(err)
			}
		case errors.Is(err, task.ErrDataTooLarge):
			hi = mid
		default:
			t.Fatal(err)
		}
	}
	t.Logf("largest put accepted under a %d-byte packet limit: %d bytes", limit, lo)
	takenBehindASmallOne(t, c, lo)
}

// doc.go: "Items of a dead consumer come back when another consumer finds
// the queue empty or registers", and PROTOCOL.md, Take at least once:
// "Register ... A lost reply is settled by the marker ... Then return the
// items of dead consumers". A consumer whose marker's create was applied
// with its reply lost settled it by the marker and skipped the return: a
// dead consumer's item stayed in flight behind the items queued after it
// (taken first), under a load that never empties the queue for good.
func TestRegistrationWithALostReplyReturnsTheDead(t *testing.T) {
	w := newFaultWorld(t, 3)
	const a, b, p = 0, 1, 2
	qa := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	qb := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	qp := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	for _, d := range []string{"x", "y", "z"} {
		if _, err := mustRun(t, w.World, p, qp.Put([]byte(d))); err != nil {
			t.Fatal(err)
		}
	}
	if it, err := mustRun(t, w.World, a, qa.Take()); err != nil || string(it.Data) != "x" {
		t.Fatalf("a's take: %v %v", it, err)
	}
	w.Server.Expire(w.Conns[a]) // a is dead: x must come back
	w.Drive()
	hit := w.cutAfter(w.Conns[b], true, func(req task.Request) bool {
		r, ok := req.(*task.CreateRequest)
		return ok && strings.HasPrefix(r.Path, "/q.consumers/")
	})
	take := sim.Submit(w.World, b, qb.Take())
	w.Drive()
	if !*hit || take.Done {
		t.Fatalf("the registration was not cut off: %v %+v", *hit, take)
	}
	w.heal()
	if !w.Settle(func() bool { return take.Done }) || take.Err != nil {
		t.Fatalf("b's take: %+v", take)
	}
	if got := string(take.V.Data); got != "x" {
		t.Fatalf("b registered and took %q with the dead consumer's x still in flight (%v): want x, returned at registration under its own name, ahead of y",
			got, w.Children("/q.inflight"))
	}
}

// Item.Ack: "ErrDeliveryLost: not applied"; an Ack run on a later
// session than the item's cannot know that when an earlier Ack of the
// item was sent on the item's session and its outcome was never learnt.
// Ack #1's multi is applied and its reply lost, and the session expires
// in the cut (Ack #1: ErrOutcomeUnknown). Ack #2, the caller trying
// again on the next session, said ErrDeliveryLost ("the item goes back
// to the queue") for an item acknowledged, which never comes back; it
// must say ErrOutcomeUnknown.
func TestAckOnALaterSessionAfterAnAckOfUnknownOutcome(t *testing.T) {
	w := newFaultWorld(t, 2)
	const a, b = 0, 1
	qa := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	qb := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	if _, err := mustRun(t, w.World, b, qb.Put([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	it, err := mustRun(t, w.World, a, qa.Take())
	if err != nil {
		t.Fatal(err)
	}
	hit := false
	w.hook = func(c *fakezk.Conn, req task.Request) {
		if c != w.Conns[a] || !isMulti(req) {
			return
		}
		w.hook, hit = nil, true
		w.Server.Partition(c, 3*w.Timeout(), true) // applied; the session expires in the cut
	}
	first := sim.Submit(w.World, a, it.Ack())
	if !w.Settle(func() bool { return first.Done }) || !hit {
		t.Fatalf("the first ack never ended (cut: %v)", hit)
	}
	if !errors.Is(first.Err, queue.ErrOutcomeUnknown) {
		t.Fatalf("the ack whose reply was lost with its session: %v, want ErrOutcomeUnknown", first.Err)
	}
	if got := w.Children("/q.inflight"); len(got) != 0 {
		t.Fatalf("in flight after the applied ack: %v", got)
	}
	second := sim.Submit(w.World, a, it.Ack())
	if !w.Settle(func() bool { return second.Done }) {
		t.Fatal("the second ack never ended")
	}
	if errors.Is(second.Err, queue.ErrDeliveryLost) || !errors.Is(second.Err, queue.ErrOutcomeUnknown) {
		t.Fatalf("an ack on the next session after one of unknown outcome: %v, want ErrOutcomeUnknown (the first was applied: the item never comes back)", second.Err)
	}
}

// Item.Ack: "An Ack of an Item whose ack was applied already (by an
// earlier Ack, or one running at the same time, on this executor) says so
// too: nil". Two Acks of one Item are sent at once; the first's multi is
// applied, then an operator deletes the consumer's marker, and the
// second's multi fails on the marker's check. The second said
// ErrDeliveryLost ("not applied, the item goes back") for an item the
// first acknowledged, which never comes back.
func TestAckBesideAnAppliedAckWhoseMarkerThenWent(t *testing.T) {
	w := newFaultWorld(t, 2)
	const a, b = 0, 1
	qa := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	qb := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	if _, err := mustRun(t, w.World, b, qb.Put([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	it, err := mustRun(t, w.World, a, qa.Take())
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	w.hook = func(c *fakezk.Conn, req task.Request) {
		if c == w.Conns[a] && isMulti(req) {
			sent++
		}
	}
	first := sim.Submit(w.World, a, it.Ack())
	second := sim.Submit(w.World, a, it.Ack())
	w.Execs[a].RunUntilIdle()
	if sent != 2 {
		t.Fatalf("%d ack multis sent, want both", sent)
	}
	if !w.Server.Step() { // the first's multi: applied
		t.Fatal("nothing to apply")
	}
	markers := w.Children("/q.consumers")
	if len(markers) != 1 || len(w.Children("/q.inflight")) != 0 {
		t.Fatalf("after the first ack: markers %v, in flight %v", markers, w.Children("/q.inflight"))
	}
	if err := w.Server.AdminDelete("/q.consumers/" + markers[0]); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return first.Done && second.Done }) {
		t.Fatal("the acks never ended")
	}
	if first.Err != nil {
		t.Fatalf("the first ack: %v, want nil", first.Err)
	}
	if second.Err != nil {
		t.Fatalf("the second ack, beside the first which was applied: %v, want nil (ErrDeliveryLost says not applied: %v)", second.Err, errors.Is(second.Err, queue.ErrDeliveryLost))
	}
}

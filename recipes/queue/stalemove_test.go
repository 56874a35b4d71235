package queue_test

import (
	"errors"
	"path"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/queue"
)

// At least once, a take's move sent on a read older than a return of the
// item (seed 68079765663136 of the simulation, where the move's reply was
// lost, settled as not applied and sent again after a restart). B reads
// x and its move is held; A takes x, its marker is deleted by an
// operator, its ack ends with ErrDeliveryLost, and A's next take returns
// x under its own name at version 0 (a new incarnation) and takes y,
// ahead of it. B's move, sent then, deletes by name and version: it
// takes the returned incarnation, in a copy named after the one B read.
// The promises hold: the item A's ack lost came back and is delivered
// again (to B), acknowledged once, and nothing is left. The copy dates
// the delivery (its czxid, the move's zxid), not the incarnation the
// take read: the simulation's judge reads the first.
func TestMoveOnAReadOlderThanAReturn(t *testing.T) {
	w, hc := armedWorld(t)
	const b, a = 0, 1
	qa := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	qb := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	name, err := mustRun(t, w, a, qa.Put([]byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	held := hc.arm(isMove)
	ob := sim.Submit(w, b, qb.Take())
	w.Drive()
	if !closedNow(held) || ob.Done {
		t.Fatalf("B's move not held: %+v", ob)
	}
	x1, err := mustRun(t, w, a, qa.Take())
	if err != nil || string(x1.Data) != "x" {
		t.Fatalf("A's take of x: %v, %v", x1, err)
	}
	if _, err := mustRun(t, w, a, qa.PutPriority([]byte("y"), -1)); err != nil {
		t.Fatal(err)
	}
	idA := path.Base(queue.ItemCopy(x1))[:32]
	if err := w.Server.AdminDelete("/q.consumers/" + idA); err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, a, x1.Ack()); !errors.Is(err, queue.ErrDeliveryLost) {
		t.Fatalf("A's ack with its marker gone: %v, want ErrDeliveryLost", err)
	}
	y, err := mustRun(t, w, a, qa.Take()) // registers, returns x, takes y
	if err != nil || string(y.Data) != "y" {
		t.Fatalf("A's next take: %v, %v; want y", y, err)
	}
	back, ok := w.NodeStat("/q/" + name)
	if !ok || back.Czxid == queue.ItemCzxid(x1) || back.Version != 0 {
		t.Fatalf("x not returned under its own name as a new incarnation at version 0: %+v %v", back, ok)
	}
	hc.release()
	w.Drive()
	if !ob.Done || ob.Err != nil || string(ob.V.Data) != "x" {
		t.Fatalf("B's take: %+v; want x, back after A's ack was lost", ob)
	}
	x2 := ob.V
	if _, ok := w.NodeStat("/q/" + name); ok {
		t.Fatalf("x taken by B but still in the queue")
	}
	// The take read x1's incarnation; its copy was made after the return.
	cp, ok := w.NodeStat(queue.ItemCopy(x2))
	if queue.ItemCzxid(x2) != queue.ItemCzxid(x1) || !ok || cp.Czxid <= back.Czxid {
		t.Fatalf("B's copy %s (%+v, %v): want it named after the incarnation read (%#x) and made after the return (%#x)",
			queue.ItemCopy(x2), cp, ok, queue.ItemCzxid(x1), back.Czxid)
	}
	for _, ack := range []struct {
		i  int
		it *queue.Item
	}{{b, x2}, {a, y}} {
		if _, err := mustRun(t, w, ack.i, ack.it.Ack()); err != nil {
			t.Fatalf("ack of %s: %v", ack.it.Data, err)
		}
	}
	if _, err := mustRun(t, w, a, x1.Ack()); !errors.Is(err, queue.ErrDeliveryLost) {
		t.Fatalf("A's ack of x again: %v, want ErrDeliveryLost", err)
	}
	if q, fl := w.Children("/q"), w.Children("/q.inflight"); len(q)+len(fl) != 0 {
		t.Fatalf("left after every ack: queue %v, in flight %v", q, fl)
	}
}

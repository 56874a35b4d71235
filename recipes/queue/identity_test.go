package queue_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

// Names handed out again. The directory's counter names items; it gives a
// name out a second time when an operator deletes the empty directory
// (the next put creates it again, counting from zero) and when it has run
// out at int32's maximum. These tests hold the queue to its promises
// there: an item is known by its incarnation (its czxid), never by its
// name alone.

// faultWorld is a world of n clients whose requests pass through a hook
// the test sets: it sees each request just after it was sent.
type faultWorld struct {
	*sim.World
	hook func(c *fakezk.Conn, req task.Request)
}

func newFaultWorld(t *testing.T, n int) *faultWorld {
	t.Helper()
	fw := &faultWorld{}
	w, err := sim.New(sim.Config{Seed: 1, Clients: n, Wrap: func(_ int, c *fakezk.Conn) task.Conn {
		return &hookConn{Conn: c, fw: fw}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	fw.World = w
	return fw
}

type hookConn struct {
	*fakezk.Conn
	fw *faultWorld
}

func (c *hookConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.Conn.Do(req, done, watch)
	if h := c.fw.hook; h != nil {
		h(c.Conn, req)
	}
}

// cutAfter arranges that the first request of client conn for which match
// holds is applied (or not) and its reply lost: the client is cut off
// for a second, within its session. It reports whether that happened.
func (fw *faultWorld) cutAfter(conn *fakezk.Conn, applied bool, match func(task.Request) bool) *bool {
	hit := new(bool)
	fw.hook = func(c *fakezk.Conn, req task.Request) {
		if c != conn || !match(req) {
			return
		}
		fw.hook = nil
		*hit = true
		fw.Server.Partition(c, time.Second, applied)
	}
	return hit
}

// heal lets the clock run past a cut so the cut client reconnects.
func (fw *faultWorld) heal() {
	fw.Clock.Advance(2 * time.Second)
	fw.Drive()
}

func isMulti(req task.Request) bool { _, ok := req.(*task.MultiRequest); return ok }

// isItemDelete matches a take's delete of an item of /q: a delete, or a
// multi holding one.
func isItemDelete(req task.Request) bool {
	switch r := req.(type) {
	case *task.DeleteRequest:
		return strings.HasPrefix(r.Path, "/q/")
	case *task.MultiRequest:
		for _, op := range r.Ops {
			if isItemDelete(op) {
				return true
			}
		}
	}
	return false
}

// At-least-once, the counter restarted by an operator: consumer A holds
// x1 (not acknowledged) when the empty directory is deleted, and the next
// put names x2 as x1 was named. A's take of x2 must take it (it leaves the
// queue; nobody else is delivered it), and each item is acknowledged once.
func TestNameGivenAgainAtLeastOnce(t *testing.T) {
	w := newWorld(t, 3)
	const a, b, p = 0, 1, 2
	qa := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	qb := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	qp := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	n1, err := mustRun(t, w, p, qp.Put([]byte("x1")))
	if err != nil {
		t.Fatal(err)
	}
	x1, err := mustRun(t, w, a, qa.Take())
	if err != nil || string(x1.Data) != "x1" {
		t.Fatalf("take of x1: %v %v", x1, err)
	}
	// The operator deletes the empty directory: its counter restarts.
	if err := w.Server.AdminDelete("/q"); err != nil {
		t.Fatal(err)
	}
	n2, err := mustRun(t, w, p, qp.Put([]byte("x2")))
	if err != nil {
		t.Fatal(err)
	}
	if n2 != n1 {
		t.Fatalf("the counter did not hand %s out again (got %s): the test checks nothing", n1, n2)
	}
	x2, err := mustRun(t, w, a, qa.Take())
	if err != nil || string(x2.Data) != "x2" {
		t.Fatalf("take of x2: %v %v", x2, err)
	}
	if items := w.Children("/q"); len(items) != 0 {
		t.Fatalf("x2 taken by A but still in the queue: %v", items)
	}
	ob := sim.Submit(w, b, qb.Take())
	w.Drive()
	if ob.Done {
		t.Fatalf("B was delivered %q, which A holds", ob.V.Data)
	}
	for _, it := range []*queue.Item{x1, x2} {
		if _, err := mustRun(t, w, a, it.Ack()); err != nil {
			t.Fatalf("A's ack of %s: %v", it.Data, err)
		}
	}
	if left := w.Children("/q.inflight"); len(left) != 0 {
		t.Fatalf("in flight after both acks: %v", left)
	}
}

// At-most-once, a name handed out again while a take's delete is in
// doubt: the delete of x1 is applied and its reply lost; before the take
// settles it, a new item x2 is put under x1's name (the counter restarted
// by an operator, or run out at int32's maximum). The take must not
// delete x2: x1 is delivered or reported (UnknownTakeError), and x2 is
// taken next.
func TestLostDeleteNameGivenAgain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(w *faultWorld) error // before x1 is put
		between func(w *faultWorld) error // after x1's delete, before x2's put
	}{
		{"restart", func(*faultWorld) error { return nil }, func(w *faultWorld) error { return w.Server.AdminDelete("/q") }},
		{"wrap", func(w *faultWorld) error { return w.SetCounters("/q", 0, math.MaxInt32) }, func(*faultWorld) error { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newFaultWorld(t, 2)
			const a, p = 0, 1
			q := mustNew(t, "/q")
			if _, err := mustRun(t, w.World, p, task.Create("/q", nil, task.Persistent)); err != nil {
				t.Fatal(err)
			}
			if err := tc.prepare(w); err != nil {
				t.Fatal(err)
			}
			if _, err := mustRun(t, w.World, p, q.Put([]byte("x1"))); err != nil {
				t.Fatal(err)
			}
			hit := w.cutAfter(w.Conns[a], true, isItemDelete)
			out := sim.Submit(w.World, a, q.Take())
			w.Drive()
			if !*hit || out.Done {
				t.Fatalf("the take's delete was not cut off: %v %+v", *hit, out)
			}
			if err := tc.between(w); err != nil {
				t.Fatal(err)
			}
			if _, err := mustRun(t, w.World, p, q.Put([]byte("x2"))); err != nil {
				t.Fatal(err)
			}
			w.heal()
			if !w.Settle(func() bool { return out.Done }) {
				t.Fatal("the take never ended")
			}
			var ute *queue.UnknownTakeError
			switch {
			case out.Err == nil && string(out.V.Data) == "x1":
			case errors.As(out.Err, &ute) && string(ute.Item.Data) == "x1":
			default:
				t.Fatalf("take: %+v, want x1 delivered or reported", out)
			}
			next := sim.Submit(w.World, p, q.Take())
			if !w.Settle(func() bool { return next.Done }) || next.Err != nil || string(next.V.Data) != "x2" {
				t.Fatalf("x2 after the take: %+v (lost)", next)
			}
		})
	}
}

// At the wrap: once the directory's counter has run out, Put still puts
// while the queue can restart its counter (the directory is empty), and
// refuses with ErrExhausted, creating nothing, while items are queued;
// once they are taken, puts go on, in order.
func TestPutAtWrap(t *testing.T) {
	for _, mode := range []queue.Mode{queue.AtMostOnce, queue.AtLeastOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			w := newWorld(t, 1)
			q := mustNew(t, "/q", queue.WithMode(mode))
			take := func() string {
				t.Helper()
				it, err := mustRun(t, w, 0, q.Take())
				if err != nil {
					t.Fatal(err)
				}
				if mode == queue.AtLeastOnce {
					if _, err := mustRun(t, w, 0, it.Ack()); err != nil {
						t.Fatal(err)
					}
				}
				return string(it.Data)
			}
			if _, err := mustRun(t, w, 0, task.Create("/q", nil, task.Persistent)); err != nil {
				t.Fatal(err)
			}
			if err := w.SetCounters("/q", 0, math.MaxInt32); err != nil {
				t.Fatal(err)
			}
			// Empty and run out: both puts succeed.
			for _, d := range []string{"a", "b"} {
				if _, err := mustRun(t, w, 0, q.Put([]byte(d))); err != nil {
					t.Fatalf("put %s at the wrap: %v", d, err)
				}
			}
			// Run out with items queued: refused, nothing created.
			if err := w.SetCounters("/q", 0, math.MaxInt32); err != nil {
				t.Fatal(err)
			}
			before := w.Children("/q")
			if _, err := mustRun(t, w, 0, q.Put([]byte("c"))); !errors.Is(err, queue.ErrExhausted) {
				t.Fatalf("put with the counter run out and items queued: %v, want ErrExhausted", err)
			}
			if after := w.Children("/q"); len(after) != len(before) {
				t.Fatalf("a refused put left nodes: %v, before %v", after, before)
			}
			if got := take() + take(); got != "ab" {
				t.Fatalf("taken %q, want ab", got)
			}
			for _, d := range []string{"c", "d"} {
				if _, err := mustRun(t, w, 0, q.Put([]byte(d))); err != nil {
					t.Fatalf("put %s once drained: %v", d, err)
				}
			}
			if got := take() + take(); got != "cd" {
				t.Fatalf("taken %q, want cd", got)
			}
		})
	}
}

// An ack is reported as ErrDeliveryLost only when it is known that it was
// not applied. Its multi applied and its reply lost, then the consumer's
// marker deleted by an operator before the ack settles: the item is gone
// for good, so the ack's outcome is unknown to it (ErrOutcomeUnknown), not
// lost. Not applied, the same: ErrDeliveryLost, and the item comes back.
func TestAckOutcomeAfterLostReply(t *testing.T) {
	for _, applied := range []bool{true, false} {
		name := map[bool]string{true: "applied", false: "not-applied"}[applied]
		t.Run(name, func(t *testing.T) {
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
			markers := w.Children("/q.consumers")
			if len(markers) != 1 {
				t.Fatalf("markers: %v", markers)
			}
			hit := w.cutAfter(w.Conns[a], applied, isMulti)
			ack := sim.Submit(w.World, a, it.Ack())
			w.Drive()
			if !*hit || ack.Done {
				t.Fatalf("the ack was not cut off: %v %+v", *hit, ack)
			}
			if err := w.Server.AdminDelete("/q.consumers/" + markers[0]); err != nil {
				t.Fatal(err)
			}
			w.heal()
			if !w.Settle(func() bool { return ack.Done }) {
				t.Fatal("the ack never ended")
			}
			if applied {
				if errors.Is(ack.Err, queue.ErrDeliveryLost) || !errors.Is(ack.Err, queue.ErrOutcomeUnknown) {
					t.Fatalf("applied ack: %v, want ErrOutcomeUnknown (not ErrDeliveryLost)", ack.Err)
				}
				if got := w.Children("/q"); len(got) != 0 {
					t.Fatalf("the acknowledged item came back: %v", got)
				}
				return
			}
			if !errors.Is(ack.Err, queue.ErrDeliveryLost) {
				t.Fatalf("ack not applied: %v, want ErrDeliveryLost", ack.Err)
			}
			back := sim.Submit(w.World, b, qb.Take())
			if !w.Settle(func() bool { return back.Done }) || back.Err != nil || string(back.V.Data) != "x" {
				t.Fatalf("the item after a lost delivery: %+v", back)
			}
		})
	}
}

// A take that read an item before the directory was deleted and created
// again (its read's reply delayed while another consumer took the item,
// an operator deleted the empty directory and a new item was put under
// the same name) must not take the new item for the old one: the old
// one is not delivered twice, and the new one is delivered, once.
func TestStaleReadAcrossRestart(t *testing.T) {
	for _, mode := range []queue.Mode{queue.AtMostOnce, queue.AtLeastOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			w := newFaultWorld(t, 3)
			const a, b, p = 0, 1, 2
			qa := mustNew(t, "/q", queue.WithMode(mode))
			qb := mustNew(t, "/q", queue.WithMode(mode))
			qp := mustNew(t, "/q", queue.WithMode(mode))
			if _, err := mustRun(t, w.World, p, qp.Put([]byte("x1"))); err != nil {
				t.Fatal(err)
			}
			delayed := false
			w.hook = func(c *fakezk.Conn, req task.Request) {
				if g, ok := req.(*task.GetDataRequest); ok && c == w.Conns[a] && strings.HasPrefix(g.Path, "/q/") {
					w.hook, delayed = nil, true
					w.Server.Delay(c, time.Second)
				}
			}
			out := sim.Submit(w.World, a, qa.Take())
			w.Drive()
			if !delayed || out.Done {
				t.Fatalf("A's read was not delayed: %v %+v", delayed, out)
			}
			x1, err := mustRun(t, w.World, b, qb.Take())
			if err != nil || string(x1.Data) != "x1" {
				t.Fatalf("B's take: %v %v", x1, err)
			}
			if mode == queue.AtLeastOnce {
				if _, err := mustRun(t, w.World, b, x1.Ack()); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Server.AdminDelete("/q"); err != nil {
				t.Fatal(err)
			}
			if name, err := mustRun(t, w.World, p, qp.Put([]byte("x2"))); err != nil || name != "qn-0000000000" {
				t.Fatalf("put of x2: %s %v (the name must be x1's again)", name, err)
			}
			if !w.Settle(func() bool { return out.Done }) {
				t.Fatal("A's take never ended")
			}
			if out.Err != nil || string(out.V.Data) != "x2" {
				t.Fatalf("A's take: %+v, want x2 (x1 was B's)", out)
			}
			if left := w.Children("/q"); len(left) != 0 {
				t.Fatalf("left in the queue: %v", left)
			}
		})
	}
}

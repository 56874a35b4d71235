package queue_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/acltest"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

// Every node the queue creates carries the ACL its WithACL provider gives
// for the node's path: the directories and their ancestors, items, an
// at-least-once consumer's marker, an in-flight copy (in the take's
// multi), and the item and the marker of a return (in its multi); and,
// with the option left out, none does (acltest.Check).
func TestACL(t *testing.T) {
	want := []string{"/acl", "/acl/q", "/acl/q/qn-*", "/acl/q.inflight", "/acl/q.consumers",
		"/acl/q.inflight/*", "/acl/q.consumers/*"}
	acltest.Check(t, want, func(t *testing.T, acl task.ACLProvider) []acltest.Create {
		wrap, creates := acltest.Recorders[*fakezk.Conn]()
		w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: wrap})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		qa := mustNew(t, "/acl/q", queue.WithMode(queue.AtLeastOnce), queue.WithACL(acl))
		qb := mustNew(t, "/acl/q", queue.WithMode(queue.AtLeastOnce), queue.WithACL(acl))
		if _, err := mustRun(t, w, 0, qa.Put([]byte("x"))); err != nil {
			t.Fatal(err)
		}
		if _, err := mustRun(t, w, 0, qa.Take()); err != nil {
			t.Fatal(err)
		}
		w.Server.Expire(w.Conns[0]) // the item goes back, by client 1's return
		it, err := mustRun(t, w, 1, qb.Take())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mustRun(t, w, 1, it.Ack()); err != nil {
			t.Fatal(err)
		}
		return creates()
	})
}

// An Ack an operator's ACL refuses (the consumer's marker closed, or the
// in-flight directory made read only) was not applied, and the item is
// still this consumer's: it fails at once with task.ErrNoAuth, not
// ErrDeliveryLost (which says the item is, or will be, back in the
// queue: it never would be while the consumer lives), and the ack goes
// on in the background, applied within twice the session timeout once
// the ACL lets it. The item is never delivered again.
func TestAckRefusedByACLGoesOnceAllowed(t *testing.T) {
	for _, tc := range []struct {
		name string
		node func(q string, w *sim.World) string // the node whose ACL refuses
		acl  []task.ACL
	}{
		{"marker closed", func(q string, w *sim.World) string {
			ms := w.Children(q + ".consumers")
			if len(ms) != 1 {
				t.Fatalf("markers %v, want one", ms)
			}
			return q + ".consumers/" + ms[0]
		}, []task.ACL{task.DigestACL(task.PermAll, "operator", "operator")}},
		{"in-flight directory read only", func(q string, _ *sim.World) string { return q + ".inflight" },
			[]task.ACL{{Perms: task.PermRead, Scheme: "world", ID: "anyone"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := sim.New(sim.Config{Seed: 1, Clients: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			const dir = "/acl/ack"
			qa := mustNew(t, dir, queue.WithMode(queue.AtLeastOnce))
			qb := mustNew(t, dir, queue.WithMode(queue.AtLeastOnce))
			if _, err := mustRun(t, w, 0, qa.Put([]byte("x"))); err != nil {
				t.Fatal(err)
			}
			it, err := mustRun(t, w, 0, qa.Take())
			if err != nil {
				t.Fatal(err)
			}
			node := tc.node(dir, w)
			old, ok := w.Server.NodeACL(node)
			if !ok {
				t.Fatalf("no node %s", node)
			}
			if err := w.Server.AdminSetACL(node, tc.acl); err != nil {
				t.Fatal(err)
			}
			_, err = mustRun(t, w, 0, it.Ack())
			if !errors.Is(err, task.ErrNoAuth) || errors.Is(err, queue.ErrDeliveryLost) {
				t.Fatalf("Ack refused by the ACL = %v, want ErrNoAuth (and not ErrDeliveryLost)", err)
			}
			other := sim.Submit(w, 1, qb.Take())
			until := w.Clock.Now().Add(3 * w.Timeout())
			w.Settle(func() bool { return other.Done || !w.Clock.Now().Before(until) })
			if other.Done {
				t.Fatalf("another consumer took %v (%v) while the refused ack's item was still this consumer's", other.V, other.Err)
			}
			if n := len(w.Children(dir + ".inflight")); n != 1 {
				t.Fatalf("%d in-flight copies while the ACL refuses the ack, want 1", n)
			}
			if err := w.Server.AdminSetACL(node, old); err != nil {
				t.Fatal(err)
			}
			opened := w.Clock.Now()
			w.Settle(func() bool {
				return len(w.Children(dir+".inflight")) == 0 || w.Clock.Now().Sub(opened) > 3*w.Timeout()
			})
			if n := len(w.Children(dir + ".inflight")); n != 0 {
				t.Fatalf("%d in-flight copies %s after the ACL was put back, want the ack applied", n, w.Clock.Now().Sub(opened))
			}
			if took := w.Clock.Now().Sub(opened); took > 2*w.Timeout() {
				t.Fatalf("the ack was applied %s after the ACL was put back, want within twice the session timeout", took)
			}
			if _, err := mustRun(t, w, 0, it.Ack()); err != nil {
				t.Fatalf("a second Ack after the background one was applied: %v, want nil", err)
			}
			w.Server.Expire(w.Conns[0]) // nothing of it may come back
			until = w.Clock.Now().Add(3 * w.Timeout())
			w.Settle(func() bool { return other.Done || !w.Clock.Now().Before(until) })
			if other.Done {
				t.Fatalf("the acknowledged item was delivered again: %v (%v)", other.V, other.Err)
			}
		})
	}
}

// A give-back an operator's ACL refuses: a take is canceled while its
// move is in flight, the move is applied, and the multi that gives the
// item back to the queue is refused (the consumer's marker closed). The
// item is this live consumer's, in flight, and nobody else returns it
// while the session lives: the give-back is sent again every twice the
// session timeout until the ACL lets it, and the item is back in the
// queue within that once the ACL is put back. (It used to take the
// refusal for "returned by others" and leave the item in flight until
// the session ended.)
func TestGiveBackRefusedByACLGoesOnceAllowed(t *testing.T) {
	w, hc := armedWorld(t)
	qa := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	qb := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	if _, err := mustRun(t, w, 1, qb.Put([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	heldMove := hc.arm(isItemDelete)
	take := executor.Submit(w.Execs[0], qa.Take(), nil)
	w.Drive()
	if !closedNow(heldMove) {
		t.Fatal("the take's move was not sent")
	}
	take.Cancel()
	w.Drive()
	heldBack := hc.arm(isGiveBack)
	hc.release() // the move: applied, as the take has ended
	w.Drive()
	if !closedNow(heldBack) {
		t.Fatal("the item moved as its take ended was not given back")
	}
	markers := w.Children("/q.consumers")
	if len(markers) != 1 {
		t.Fatalf("markers %v, want the taker's", markers)
	}
	marker := "/q.consumers/" + markers[0]
	old, _ := w.Server.NodeACL(marker)
	if err := w.Server.AdminSetACL(marker, []task.ACL{task.DigestACL(task.PermAll, "operator", "operator")}); err != nil {
		t.Fatal(err)
	}
	hc.release() // the give-back: refused
	until := w.Clock.Now().Add(3 * w.Timeout())
	w.Settle(func() bool { return !w.Clock.Now().Before(until) })
	if n := len(w.Children("/q.inflight")); n != 1 {
		t.Fatalf("%d in-flight copies while the ACL refuses the give-back, want 1", n)
	}
	if err := w.Server.AdminSetACL(marker, old); err != nil {
		t.Fatal(err)
	}
	opened := w.Clock.Now()
	w.Settle(func() bool {
		return len(w.Children("/q.inflight")) == 0 || w.Clock.Now().Sub(opened) > 3*w.Timeout()
	})
	if n, took := len(w.Children("/q.inflight")), w.Clock.Now().Sub(opened); n != 0 || took > 2*w.Timeout() {
		t.Fatalf("%d in-flight copies %s after the ACL was put back, want the item given back within twice the session timeout", n, took)
	}
	it, err := mustRun(t, w, 1, qb.Take())
	if err != nil || string(it.Data) != "x" {
		t.Fatalf("take after the give-back: %v, %v; want x", it, err)
	}
}

func closedNow(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// The return of a dead consumer's items an operator's ACL refuses (the
// directory's epoch closed, whose check is in the return's multi): the
// take that returns them fails with task.ErrNoAuth, and a take once the
// ACL is back returns and delivers the item. (The refused check was
// taken for "the directory changed since it was read", and the take
// read the directory and sent the return again at once, without end.)
func TestReturnRefusedByACLFailsTheTake(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	qa := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	qb := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	if _, err := mustRun(t, w, 1, qb.Put([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 0, qa.Take()); err != nil {
		t.Fatal(err)
	}
	w.Server.Expire(w.Conns[0]) // the taker is dead: its item must come back
	old, _ := w.Server.NodeACL("/q.epoch")
	if err := w.Server.AdminSetACL("/q.epoch", []task.ACL{task.DigestACL(task.PermAll, "operator", "operator")}); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 1, qb.Take()); !errors.Is(err, task.ErrNoAuth) || w.Stalled() {
		t.Fatalf("a take whose return of a dead consumer's item is refused: %v (stalled %v), want ErrNoAuth", err, w.Stalled())
	}
	if err := w.Server.AdminSetACL("/q.epoch", old); err != nil {
		t.Fatal(err)
	}
	it, err := mustRun(t, w, 1, qb.Take())
	if err != nil || string(it.Data) != "x" {
		t.Fatalf("take once the ACL is back: %v, %v; want x", it, err)
	}
}

// A put-back an operator's ACL refuses: an at-most-once take is canceled
// while its delete is in flight, the delete is applied, and the create
// that puts the item back is refused (the directory closed). Not
// applied, so sending it again can queue the item only once: it is sent
// again every twice the session timeout until the ACL lets it, and the
// item is back within that once the ACL is put back. (It used to be
// reported as "not put back" and the item was lost.)
func TestPutBackRefusedByACLGoesOnceAllowed(t *testing.T) {
	w, hc := armedWorld(t)
	qa, qb := mustNew(t, "/q"), mustNew(t, "/q")
	if _, err := mustRun(t, w, 1, qb.Put([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	heldDelete := hc.arm(isItemDelete)
	take := executor.Submit(w.Execs[0], qa.Take(), nil)
	w.Drive()
	if !closedNow(heldDelete) {
		t.Fatal("the take's delete was not sent")
	}
	take.Cancel()
	w.Drive()
	heldBack := hc.arm(isItemCreate)
	hc.release() // the delete: applied, as the take has ended
	w.Drive()
	if !closedNow(heldBack) {
		t.Fatal("the item deleted as its take ended was not put back")
	}
	old, _ := w.Server.NodeACL("/q")
	if err := w.Server.AdminSetACL("/q", []task.ACL{task.DigestACL(task.PermAll, "operator", "operator")}); err != nil {
		t.Fatal(err)
	}
	hc.release() // the put-back: refused
	until := w.Clock.Now().Add(3 * w.Timeout())
	w.Settle(func() bool { return !w.Clock.Now().Before(until) })
	if err := w.Server.AdminSetACL("/q", old); err != nil {
		t.Fatal(err)
	}
	opened := w.Clock.Now()
	w.Settle(func() bool { return len(w.Children("/q")) > 0 || w.Clock.Now().Sub(opened) > 3*w.Timeout() })
	if n, took := len(w.Children("/q")), w.Clock.Now().Sub(opened); n != 1 || took > 2*w.Timeout() {
		t.Fatalf("%d items %s after the ACL was put back, want the item put back within twice the session timeout (reports: %v)", n, took, w.Errs)
	}
	it, err := mustRun(t, w, 1, qb.Take())
	if err != nil || string(it.Data) != "x" {
		t.Fatalf("take after the put-back: %v, %v; want x", it, err)
	}
}

// armedWorld is a world of two clients whose client 0 sends through an
// armConn (held requests).
func armedWorld(t *testing.T) (*sim.World, *armConn) {
	t.Helper()
	var hc *armConn
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: func(i int, c *fakezk.Conn) task.Conn {
		if i == 0 {
			hc = &armConn{Conn: c}
			return hc
		}
		return c
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w, hc
}

// isGiveBack is an at-least-once give-back's multi: it creates the item
// in the queue again.
func isGiveBack(req task.Request) bool {
	r, ok := req.(*task.MultiRequest)
	if !ok {
		return false
	}
	for _, op := range r.Ops {
		if cr, ok := op.(*task.CreateRequest); ok && strings.HasPrefix(cr.Path, "/q/") {
			return true
		}
	}
	return false
}

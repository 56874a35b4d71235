package semaphore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/task"
)

// Adversarial tests, round 8: promises of the package doc checked
// literally under schedules chosen to break them.

// holdConn holds, unsent, the first request after arm that match
// accepts, until send (a request slow on the wire); other requests go
// through. It runs on the simulation's one goroutine.
type holdConn struct {
	*fakezk.Conn
	match func(task.Request) bool
	req   task.Request
	done  func(task.Response)
	watch func(task.Event)
}

func (h *holdConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if h.match != nil && h.match(req) {
		h.match, h.req, h.done, h.watch = nil, req, done, watch
		return
	}
	h.Conn.Do(req, done, watch)
}

// send sends the held request, if any.
func (h *holdConn) send() {
	if h.req != nil {
		req := h.req
		h.req = nil
		h.Conn.Do(req, h.done, h.watch)
	}
}

func holdWorld(t *testing.T) (*sim.World, *holdConn) {
	t.Helper()
	var hc *holdConn
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1, Wrap: func(_ int, conn *fakezk.Conn) task.Conn {
		hc = &holdConn{Conn: conn}
		return hc
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w, hc
}

// The package doc: "TryAcquire fails with ErrBusy when no lease is free
// or another acquirer is ahead of it, leaving no node behind";
// Semaphore.TryAcquire "fails with ErrBusy while another acquirer holds
// [the internal lock], waiting for a lease or about to hold one".
//
// One process, n = 1, holds the lease; its TryAcquire fails with ErrBusy
// (no lease free). The busy try withdraws its lease node before it fails,
// but leaves its internal lock node to the cleanup flow that starts after
// the outcome, and that delete is slow on the wire: the caller hears
// ErrBusy with the lock node still there. It releases its lease (done,
// the lease is free) and tries again: the second TryAcquire finds its
// own finished attempt "ahead" on the internal lock and fails with
// ErrBusy, with every lease free and no other acquirer.
func TestAdv8BusyTryLeavesNoInternalLockBehind(t *testing.T) {
	w, hc := holdWorld(t)
	m := mustSem(t, "/s", 1)
	l, err := mustRun(t, w, 0, m.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	hc.match = func(req task.Request) bool {
		r, ok := req.(*task.DeleteRequest)
		return ok && strings.HasPrefix(r.Path, "/s/locks/")
	}
	try := sim.Submit(w, 0, m.TryAcquire())
	// Drive until the try has ended or its internal lock's delete is on
	// the wire (held); in the second case the try waits for it.
	w.Drive()
	if try.Done && len(w.Children("/s/locks")) != 0 {
		t.Errorf("ErrBusy heard with the try's internal lock node still there: %v", w.Children("/s/locks"))
	}
	if !try.Done {
		if hc.req == nil {
			t.Fatal("the busy try neither ended nor released its internal lock")
		}
		hc.send()
		if !w.Settle(func() bool { return try.Done }) {
			t.Fatal("the busy try never ended")
		}
	}
	if !errors.Is(try.Err, semaphore.ErrBusy) {
		t.Fatalf("try with the one lease held: %v, want ErrBusy", try.Err)
	}
	// The caller goes on, while a delete of the try may still be on the
	// wire: it gives its lease back and tries again.
	if _, err := mustRun(t, w, 0, l.Release()); err != nil {
		t.Fatal(err)
	}
	l2, err := mustRun(t, w, 0, m.TryAcquire())
	hc.send()
	if err != nil {
		t.Fatalf("try with the lease free and no other acquirer: %v", err)
	}
	if _, err := mustRun(t, w, 0, l2.Release()); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if n := len(w.Children("/s/leases")) + len(w.Children("/s/locks")); n != 0 {
		t.Fatalf("nodes left: leases %v locks %v", w.Children("/s/leases"), w.Children("/s/locks"))
	}
	noReportedErrors(t, w)
}

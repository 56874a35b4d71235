package semaphore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/task"
)

// queueConn holds every request match accepts (in order) until release.
type queueConn struct {
	*fakezk.Conn
	match func(task.Request) bool
	held  []func()
}

func (q *queueConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if q.match != nil && q.match(req) {
		q.held = append(q.held, func() { q.Conn.Do(req, done, watch) })
		return
	}
	q.Conn.Do(req, done, watch)
}

func (q *queueConn) release() {
	hs := q.held
	q.held, q.match = nil, nil
	for _, h := range hs {
		h()
	}
}

// Client: "Acquire, TryAcquire and AcquireMany first wait, within their
// own ctx, for every such delete of this Client: ... the cleanup of an
// acquire that ended without the lease (deadline, cancel, error; the
// internal lock's node included)".
//
// n = 1, client 1 holds the lease. The Client on client 0 tries: it takes
// the internal lock, finds no lease free, deletes its lease node and
// releases the internal lock; the ctx is canceled while that release's
// delete is on the wire. The lock's Release then goes on as an uncounted
// flow of its own (task.Go in Held.Release), and the attempt's cleanup was
// withdrawn (a.undo in withdraw): nothing is counted in the Client's
// pending. Both deletes are lost with the connection (not applied) and
// the flow's is retried after the reconnect. Client 1 releases; the
// Client tries again, no other acquirer, the lease free: it does not wait
// for its own internal lock node's delete, its create is applied first,
// and it fails with ErrBusy behind its own node.
// Client: Acquire and TryAcquire "first wait ... for every such delete of
// this Client: ... the cleanup of an acquire that ended without the lease
// (deadline, cancel, error; the internal lock's node included)".
//
// n = 1, client 1 holds the lease. A TryAcquire on client 0 takes the
// internal lock, finds no lease free, deletes its lease node and
// releases the internal lock; its ctx is canceled while that delete is on
// the wire, and the connection drops with both deletes unapplied. The
// internal lock's delete went on as a flow of its own, uncounted (the
// lock's Release, its caller's scope ended), so once client 1 released,
// the Client's next TryAcquire did not wait for it, found its own
// finished try's node ahead of it on the internal lock and failed with
// ErrBusy, the lease free and no other acquirer (this test failed on the
// code before the fix: zkops.Count).
func TestCanceledBusyTryCountsTheInternalLocksDelete(t *testing.T) {
	var qc *queueConn
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: func(i int, conn *fakezk.Conn) task.Conn {
		if i == 0 {
			qc = &queueConn{Conn: conn}
			return qc
		}
		return conn
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	m := mustSem(t, "/s", 1)
	other, err := mustRun(t, w, 1, m.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := semaphore.NewClient(w.Execs[0], "/s", 1)
	if err != nil {
		t.Fatal(err)
	}
	qc.match = deletesUnder("/s/locks/")
	var cancel context.CancelFunc
	var firstErr, tryErr error
	returned, proceed, over := make(chan struct{}), make(chan struct{}), make(chan struct{})
	a := w.Go(0, func(a *sim.Actor) {
		defer close(over)
		var ctx context.Context
		ctx, cancel = a.WithCancel(a.Context())
		_, firstErr = cl.TryAcquire(ctx)
		close(returned)
		if a.Wait(a.Context(), proceed) != nil {
			return
		}
		var l *semaphore.Lease
		l, tryErr = cl.TryAcquire(a.Context())
		if tryErr == nil {
			_ = cl.Release(a.Context(), l)
		}
	})
	w.Settle(func() bool { return len(qc.held) == 1 })
	if len(qc.held) != 1 || isClosed(returned) {
		t.Fatalf("setup: the busy try's internal unlock is not on the wire (held %d, returned %v, %v)", len(qc.held), isClosed(returned), firstErr)
	}
	w.Interrupt(a, cancel)
	qc.match = nil
	w.Execs[0].RunUntilIdle()        // the release goes on as a flow of its own: its delete is sent
	qc.release()                     // the first delete too: both are on the wire
	w.Server.Drop(w.Conns[0], false) // and lost with the connection, not applied
	w.Settle(func() bool { return isClosed(returned) })
	if !errors.Is(firstErr, task.ErrCanceled) {
		t.Fatalf("canceled try = %v, want ErrCanceled", firstErr)
	}
	locks := w.Children("/s/locks")
	if _, err := mustRun(t, w, 1, other.Release()); err != nil {
		t.Fatal(err)
	}
	close(proceed)
	w.Settle(func() bool { return isClosed(over) })
	if tryErr != nil {
		t.Fatalf("TryAcquire with the lease free and no other acquirer = %v; internal lock nodes when the canceled try returned: %v", tryErr, locks)
	}
}

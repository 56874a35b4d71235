package semaphore_test

// Promises of the package's docs tried by an adversarial review: the
// first two tests (AcquireMany's bad k, a busy try whose withdraw is
// refused) fail on the code before their fix; the others held, and check
// what no other test does, but the last two (a Client that met a node of
// its own still being deleted), which fail on the code before their fix
// too.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/task"
)

// leaseWorld is a world of n clients whose client 0 can hold one
// request unsent (holdConn, adv8_test.go).
func leaseWorld(t *testing.T, n int) (*sim.World, *holdConn) {
	t.Helper()
	var hc *holdConn
	w, err := sim.New(sim.Config{Seed: 1, Clients: n, Wrap: func(i int, conn *fakezk.Conn) task.Conn {
		if i == 0 {
			hc = &holdConn{Conn: conn}
			return hc
		}
		return conn
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w, hc
}

func deletesUnder(prefix string) func(task.Request) bool {
	return func(req task.Request) bool {
		r, ok := req.(*task.DeleteRequest)
		return ok && strings.HasPrefix(r.Path, prefix)
	}
}

// Package doc: "An acquire that fails, is canceled or passes its deadline
// leaves no node behind". Holds; no existing test cancels at this point:
// n = 1, one acquirer has decided to hold and releases the internal lock
// (its delete held on the wire); the flow is canceled then. The
// acquirer's cleanup is already withdrawn, so the lease must reach the
// caller (it does: the cancellation delivers children first and the
// Detached delete hands the lease over synchronously), or its node must
// go.
func TestCancelDuringInternalUnlock(t *testing.T) {
	w, hc := leaseWorld(t, 2)
	m := mustSem(t, "/s", 1)
	hc.match = deletesUnder("/s/locks/")
	var got *semaphore.Lease
	var gotErr error
	done := false
	f := executor.Submit(w.Execs[0], m.Acquire(), func(l *semaphore.Lease, err error) { got, gotErr, done = l, err, true })
	w.Drive()
	if hc.req == nil || done {
		t.Fatalf("the internal lock's release is not in flight (done %v, %v)", done, gotErr)
	}
	f.Cancel()
	w.Drive()
	hc.send()
	w.Drive()
	if !done {
		t.Fatal("the canceled acquire never ended")
	}
	if gotErr == nil {
		if _, err := mustRun(t, w, 0, got.Release()); err != nil {
			t.Fatal(err)
		}
	} else if !errors.Is(gotErr, task.ErrCanceled) {
		t.Fatalf("canceled acquire: %v", gotErr)
	}
	w.Drive()
	if left := w.Children("/s/leases"); len(left) != 0 {
		t.Fatalf("canceled acquire (%v) left its lease node %v", gotErr, left)
	}
	if l, err := mustRun(t, w, 1, m.TryAcquire()); err != nil {
		t.Fatalf("another session's TryAcquire, nobody holding: %v", err)
	} else if _, err := mustRun(t, w, 1, l.Release()); err != nil {
		t.Fatal(err)
	}
}

// Package doc: "Bad input gets a typed error at once: ... AcquireMany of
// k < 1 or k > n leases task.ErrInvalidArgument."
//
// Schedule: the client's connection is cut (a partition of 2s, shorter
// than the session timeout: the executor is paused while disconnected).
// An actor calls Client.AcquireMany(ctx, 0), and (k > n) AcquireMany(ctx,
// 2) on n = 1, with a ctx of 1s. The check of k is inside the task, which
// the paused executor does not start: each call waits the whole second and
// returns task.ErrDeadlineExceeded, never ErrInvalidArgument. With a ctx
// that has ended, the same calls return ErrCanceled, not the typed error.
func TestAcquireManyBadKAtOnce(t *testing.T) {
	w, _ := leaseWorld(t, 1)
	cl, err := semaphore.NewClient(w.Execs[0], "/s", 1)
	if err != nil {
		t.Fatal(err)
	}
	w.Server.Partition(w.Conns[0], 2*time.Second, false)
	w.Drive()
	type res struct {
		call    string
		err     error
		elapsed time.Duration
	}
	var out []res
	done := false
	w.Go(0, func(a *sim.Actor) {
		for _, k := range []int{0, 2} {
			ctx, cancel := a.WithTimeout(a.Context(), time.Second)
			start := w.Clock.Now()
			_, err := cl.AcquireMany(ctx, k)
			out = append(out, res{fmt.Sprintf("AcquireMany(ctx of 1s, %d) of 1 lease, disconnected", k), err, w.Clock.Now().Sub(start)})
			cancel()
		}
		ended, cancel := a.WithCancel(a.Context())
		cancel()
		_, err := cl.AcquireMany(ended, 0)
		out = append(out, res{"AcquireMany(ended ctx, 0)", err, 0})
		done = true
	})
	if !w.Settle(func() bool { return done }) {
		t.Fatal("the actor never finished")
	}
	for _, r := range out {
		if !errors.Is(r.err, task.ErrInvalidArgument) || r.elapsed != 0 {
			t.Errorf("%s: %v after %v; want task.ErrInvalidArgument at once", r.call, r.err, r.elapsed)
		}
	}
}

// Option WithACL: "makes the semaphore create its lease nodes, the
// internal lock's nodes, and the directories and ancestors it creates with
// the ACL p gives for each path". No existing test of this package checks
// it: every node the semaphore creates (ancestors, PATH/locks,
// PATH/leases, a lease node, a waiter's internal lock node) is read back.
func TestWithACLOnEveryNode(t *testing.T) {
	w, _ := leaseWorld(t, 2)
	acl := []task.ACL{{Perms: task.PermAll &^ task.PermAdmin, Scheme: "world", ID: "anyone"}}
	asked := map[string]bool{}
	m, err := semaphore.New("/a/b/s", 1, semaphore.WithACL(func(p string) []task.ACL { asked[p] = true; return acl }))
	if err != nil {
		t.Fatal(err)
	}
	l, err := mustRun(t, w, 0, m.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	o := sim.Submit(w, 1, m.Acquire())
	w.Drive()
	locks := w.Children("/a/b/s/locks")
	if len(locks) != 1 || o.Done {
		t.Fatalf("waiter %+v, locks %v", o, locks)
	}
	for _, p := range []string{"/a", "/a/b", "/a/b/s", "/a/b/s/locks", "/a/b/s/leases", l.Path(), "/a/b/s/locks/" + locks[0]} {
		got, err := mustRun(t, w, 0, task.GetACL(p))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(got.ACL) != 1 || got.ACL[0] != acl[0] {
			t.Errorf("%s created with ACL %v, want %v (provider asked for %v)", p, got.ACL, acl, asked)
		}
	}
	if _, err := mustRun(t, w, 0, l.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o.Done }) || o.Err != nil {
		t.Fatalf("waiter: %+v", o)
	}
}

// Package doc: "TryAcquire fails with ErrBusy when no lease is free ...,
// leaving no node behind"; Semaphore.TryAcquire: "only then fails with
// ErrBusy: when the caller hears ErrBusy no node of the try is left".
//
// Schedule: n = 1, client 0 holds the lease. Someone else (client 1 here,
// as an operator would) sets PATH/leases' ACL to world:anyone with every
// permission but DELETE. Client 1's TryAcquire creates its lease node,
// counts 2 > 1, and its withdraw's delete is refused (ErrNoAuth): the
// caller heard ErrBusy all the same, the try's lease node still there
// (counted as a lease held, for the session's life). It hears the
// refusal now.
func TestBusyTryWhoseWithdrawIsRefused(t *testing.T) {
	w, _ := leaseWorld(t, 2)
	m := mustSem(t, "/s", 1)
	l, err := mustRun(t, w, 0, m.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	noDelete := []task.ACL{{Perms: task.PermAll &^ task.PermDelete, Scheme: "world", ID: "anyone"}}
	if _, err := mustRun(t, w, 1, task.SetACL("/s/leases", noDelete, -1)); err != nil {
		t.Fatal(err)
	}
	_, err = mustRun(t, w, 1, m.TryAcquire())
	left := w.Children("/s/leases")
	if errors.Is(err, semaphore.ErrBusy) && len(left) != 1 {
		t.Fatalf("TryAcquire heard %v with the lease nodes %v there (the holder's is %s)", err, left, l.Path())
	}
	if !errors.Is(err, task.ErrNoAuth) {
		t.Fatalf("TryAcquire = %v, want the refused withdraw's ErrNoAuth (leases %v)", err, left)
	}
}

// Lease.Fenced: "Then [the lease lost] Fenced fails with an error
// wrapping ErrLeaseLost ... and the lease is marked lost. ... Another
// failing op gives the usual *task.OpError". Bad ops (nil, an invalid
// path, data over the limit) must get a typed error without ending a
// lease that is still held.
func TestFencedBadOpsKeepLease(t *testing.T) {
	w, _ := leaseWorld(t, 1)
	m := mustSem(t, "/s", 1)
	l, err := mustRun(t, w, 0, m.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, task.MaxDataSize)
	for _, tc := range []struct {
		name string
		ops  []task.MultiOp
		want error
	}{
		{"nil op", []task.MultiOp{nil}, task.ErrInvalidArgument},
		{"invalid path", []task.MultiOp{&task.CreateRequest{Path: "/a/", Mode: task.Persistent}}, task.ErrInvalidPath},
		{"data too large", []task.MultiOp{&task.CreateRequest{Path: "/big", Data: big, Mode: task.Persistent}}, task.ErrDataTooLarge},
		{"no parent", []task.MultiOp{&task.CreateRequest{Path: "/x/y", Mode: task.Persistent}}, task.ErrNoNode},
	} {
		_, err := mustRun(t, w, 0, l.Fenced(tc.ops...))
		if !errors.Is(err, tc.want) || errors.Is(err, semaphore.ErrLeaseLost) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		w.Drive()
		if !l.IsHeld() || l.Err() != nil {
			t.Fatalf("%s: the lease ended: %v", tc.name, l.Err())
		}
	}
}

// Package doc: "While the session is suspended the lease is uncertain:
// IsHeld is false, Err still nil; on reconnect to the same session IsHeld
// is true again", and "Deletions are watched from the first call to Done,
// Err or IsHeld". No existing test of this package suspends a holder: a
// partition shorter than the session timeout makes IsHeld false and back;
// a node an operator deletes during the partition, the first question
// asked during it or before, ends the lease after the reconnect.
func TestSuspendedLease(t *testing.T) {
	for _, tc := range []struct {
		name         string
		askBefore    bool
		deleteDuring bool
	}{{"reconnect", true, false}, {"asked-before-deleted-during", true, true}, {"first-asked-during-deleted-during", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			w, _ := leaseWorld(t, 1)
			m := mustSem(t, "/s", 1)
			l, err := mustRun(t, w, 0, m.Acquire())
			if err != nil {
				t.Fatal(err)
			}
			if tc.askBefore {
				_ = l.Err()
				w.Drive()
			}
			w.Server.Partition(w.Conns[0], time.Second, false)
			w.Drive()
			if l.IsHeld() || l.Err() != nil || isClosed(l.Done()) {
				t.Fatalf("suspended: held %v err %v", l.IsHeld(), l.Err())
			}
			if tc.deleteDuring {
				if err := w.Server.AdminDelete(l.Path()); err != nil {
					t.Fatal(err)
				}
			}
			end := w.Clock.Now().Add(2 * time.Second)
			w.Settle(func() bool { return !w.Clock.Now().Before(end) })
			if tc.deleteDuring {
				if !isClosed(l.Done()) || !errors.Is(l.Err(), semaphore.ErrLeaseLost) || l.IsHeld() {
					t.Fatalf("after the reconnect, node deleted: held %v err %v", l.IsHeld(), l.Err())
				}
				return
			}
			if !l.IsHeld() || l.Err() != nil {
				t.Fatalf("after the reconnect: held %v err %v", l.IsHeld(), l.Err())
			}
		})
	}
}

// Lease: "lost (Err wraps ErrLeaseLost and the cause:
// task.ErrSessionExpired, task.ErrClosed, ...)". No test of this package
// or of zkops closes the executor under a holder: the lease ends, lost,
// with ErrClosed as the cause, whether or not it was asked before.
func TestCloseEndsLease(t *testing.T) {
	for _, ask := range []bool{false, true} {
		w, _ := leaseWorld(t, 1)
		l, err := mustRun(t, w, 0, mustSem(t, "/s", 1).Acquire())
		if err != nil {
			t.Fatal(err)
		}
		if ask {
			_ = l.Err()
			w.Drive()
		}
		w.Execs[0].Shutdown()
		w.Drive()
		if !isClosed(l.Done()) || !errors.Is(l.Err(), semaphore.ErrLeaseLost) || !errors.Is(l.Err(), task.ErrClosed) || l.IsHeld() {
			t.Fatalf("asked %v: after Close: held %v err %v", ask, l.IsHeld(), l.Err())
		}
	}
}

// Package doc: "A lease is lost when its session ends ... Done is closed
// and Err wraps ErrLeaseLost and the cause"; Semaphore.Acquire: "fails
// ... with task.ErrSessionExpired when the session ends". Holds, at a
// point no existing test reaches: the session expires after the acquirer
// decided to hold, while the internal lock's delete is on the wire.
// Either Acquire fails with ErrSessionExpired, or the lease it returns
// has already ended, lost with ErrSessionExpired: never a lease that
// looks held on a dead session.
func TestExpiryDuringInternalUnlock(t *testing.T) {
	w, hc := leaseWorld(t, 2)
	m := mustSem(t, "/s", 1)
	hc.match = deletesUnder("/s/locks/")
	o := sim.Submit(w, 0, m.Acquire())
	w.Drive()
	if hc.req == nil || o.Done {
		t.Fatalf("the internal lock's release is not in flight: %+v", o)
	}
	w.Server.Expire(w.Conns[0])
	if !w.Settle(func() bool { return o.Done }) {
		t.Fatal("the acquire never ended")
	}
	hc.send()
	w.Drive()
	switch {
	case o.Err != nil:
		if !errors.Is(o.Err, task.ErrSessionExpired) {
			t.Fatalf("acquire across an expiry: %v", o.Err)
		}
	case !isClosed(o.V.Done()) || !errors.Is(o.V.Err(), semaphore.ErrLeaseLost) || !errors.Is(o.V.Err(), task.ErrSessionExpired) || o.V.IsHeld():
		t.Fatalf("lease of an expired session: held %v err %v", o.V.IsHeld(), o.V.Err())
	}
	if l, err := mustRun(t, w, 1, m.TryAcquire()); err != nil {
		t.Fatalf("another session's TryAcquire after the expiry: %v", err)
	} else if _, err := mustRun(t, w, 1, l.Release()); err != nil {
		t.Fatal(err)
	}
}

// The rwlock review's schedule, on semaphore: "An acquire that fails, is
// canceled or passes its deadline leaves no node behind"; TryAcquire
// "takes a lease only if one is free now". With n = 1, client 1 holds
// the lease; the Client on client 0 waits in Acquire, holding the
// internal lock; its ctx is canceled; the cleanup's delete is sent and
// the connection drops before the server applies it, so Acquire returns
// with its lease node and internal lock node still there. Client 1
// releases. The Client's TryAcquire, with the lease free, failed with
// ErrBusy behind its own internal lock node: the Client counted nothing
// it did in the background. It counts the cleanup now
// (zkops.CleanupOnError), and the next acquire waits for it.
func TestCanceledAcquireLeavesNoNodeInTheClientsWay(t *testing.T) {
	w, _ := newWorld(t, 1, 2)
	s := mustSem(t, "/sem", 1)
	other, err := mustRun(t, w, 1, s.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := semaphore.NewClient(w.Execs[0], "/sem", 1)
	if err != nil {
		t.Fatal(err)
	}
	var cancel context.CancelFunc
	var acqErr, tryErr error
	returned, proceed, over := make(chan struct{}), make(chan struct{}), make(chan struct{})
	a := w.Go(0, func(a *sim.Actor) {
		defer close(over)
		var ctx context.Context
		ctx, cancel = a.WithCancel(a.Context())
		_, acqErr = cl.Acquire(ctx)
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
	w.Settle(func() bool { return len(w.Children("/sem/leases")) == 2 })
	w.Interrupt(a, cancel)
	w.Execs[0].RunUntilIdle()
	w.Server.Drop(w.Conns[0], false)
	w.Settle(func() bool { return isClosed(returned) })
	left := append(w.Children("/sem/leases"), w.Children("/sem/locks")...)
	if _, err := mustRun(t, w, 1, other.Release()); err != nil {
		t.Fatal(err)
	}
	close(proceed)
	if !w.Settle(func() bool { return isClosed(over) }) {
		t.Fatal("actor never ended")
	}
	if !errors.Is(acqErr, task.ErrCanceled) {
		t.Fatalf("Acquire after cancel: %v", acqErr)
	}
	if tryErr != nil {
		t.Fatalf("TryAcquire with the lease free = %v; left when the canceled Acquire returned: %v", tryErr, left)
	}
}

// The same after a loss: the Client's lease is lost because an operator
// wrote its node; the node's delete (zkops.Holding.Lose) is delayed by a
// connection drop. The Client's next TryAcquire, with no other acquirer,
// failed with ErrBusy (1 of 1 leases taken, by its own lost lease). The
// delete is counted now (zkops.Holding.Count), from before Done closes.
func TestLostLeasesNodeIsNotInTheClientsWay(t *testing.T) {
	w, _ := newWorld(t, 1, 1)
	cl, err := semaphore.NewClient(w.Execs[0], "/sem", 1)
	if err != nil {
		t.Fatal(err)
	}
	var l *semaphore.Lease
	var acqErr, tryErr error
	held, over := make(chan struct{}), make(chan struct{})
	w.Go(0, func(a *sim.Actor) {
		defer close(over)
		l, acqErr = cl.Acquire(a.Context())
		close(held)
		if acqErr != nil || a.Wait(a.Context(), l.Done()) != nil {
			return
		}
		var l2 *semaphore.Lease
		l2, tryErr = cl.TryAcquire(a.Context())
		if tryErr == nil {
			_ = cl.Release(a.Context(), l2)
		}
	})
	w.Settle(func() bool { return isClosed(held) })
	if acqErr != nil {
		t.Fatal(acqErr)
	}
	_ = l.Err()
	w.Drive()
	if err := w.Server.AdminSetData(l.Path(), []byte("operator")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10 && !isClosed(l.Done()); i++ {
		w.Server.RunUntilIdle()
		w.Execs[0].RunUntilIdle()
	}
	if !isClosed(l.Done()) {
		t.Fatal("the loss was not heard")
	}
	w.Server.Drop(w.Conns[0], false)
	if !w.Settle(func() bool { return isClosed(over) }) {
		t.Fatal("actor never ended")
	}
	if tryErr != nil {
		t.Fatalf("TryAcquire with no other acquirer, after the Client's lease was lost: %v", tryErr)
	}
}

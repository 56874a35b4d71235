package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/task"
)

// Promises of the package's docs tried by an adversarial review: the
// first test fails on the code before its fix; the next two held, and
// check what no other test does; the last two (a Client that queued
// behind a node of its own still being deleted) fail on the code before
// their fix.

// Package doc: "TryAcquire and TryAcquireRead fail with ErrBusy where
// Acquire would wait, leaving no node behind"; RWLock.TryAcquire "takes the
// write lock only if it need not wait"; PROTOCOL.md step 4: "Other children
// (InterProcessMutex's "-lock-" nodes, kazoo's, stray names) are ignored,
// never an error."
//
// The directory holds one stray node (no contender) and its sequence
// counter is at its end: the try's node is numbered 2147483647
// (exhausted). It withdraws its node, lists (no contender: the stray is
// not one) and then waits in zkops.EmptyDir for the directory to empty,
// that is for the stray, forever, instead of failing with ErrBusy (it
// fails with ErrBusy at once now, as lock's TryAcquire does).
func TestTryAtAnExhaustedCounterBesideAStray(t *testing.T) {
	for _, mode := range []string{"write", "read"} {
		t.Run(mode, func(t *testing.T) {
			w, _ := newWorld(t, 1)
			l := mustLock(t, "/rw")
			for _, p := range []string{"/rw", "/rw/stray"} {
				if _, err := mustRun(t, w, 0, task.Create(p, nil, task.Persistent)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Server.SetCounters("/rw", 0, math.MaxInt32); err != nil {
				t.Fatal(err)
			}
			try := l.TryAcquire()
			if mode == "read" {
				try = l.TryAcquireRead()
			}
			o := sim.Submit(w, 0, try)
			if !w.Settle(func() bool { return o.Done }) {
				t.Fatalf("Try%s with an exhausted counter and a stray node still waits (children %v): it waits for the stray to go", mode, w.Children("/rw"))
			}
			if !errors.Is(o.Err, rwlock.ErrBusy) && o.Err != nil {
				t.Fatalf("Try%s: %v", mode, o.Err)
			}
		})
	}
}

// HOLDS (no existing test checks it): bad ops given to Client.Fenced (a
// nil op, data over the size limit, an invalid path) get typed errors at
// once, and do not end the hold (only a failed check does).
func TestFencedBadOpsTypedErrors(t *testing.T) {
	w, _ := newWorld(t, 1)
	cl, err := rwlock.NewClient(w.Execs[0], "/rw")
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	var h *rwlock.Held
	over := make(chan struct{})
	w.Go(0, func(a *sim.Actor) {
		defer close(over)
		ctx := a.Context()
		var err error
		if h, err = cl.Acquire(ctx); err != nil {
			errs = append(errs, err)
			return
		}
		for _, op := range []task.MultiOp{nil, task.SetOp("/rw", make([]byte, 2<<20), task.AnyVersion), task.SetOp("bad", nil, task.AnyVersion)} {
			_, err := cl.Fenced(ctx, h, op)
			errs = append(errs, err)
		}
		errs = append(errs, cl.Release(ctx, nil))
		if !h.IsHeld() {
			errs = append(errs, fmt.Errorf("hold ended: %w", h.Err()))
		}
		errs = append(errs, cl.Release(ctx, h))
	})
	if !w.Settle(func() bool { return isClosed(over) }) {
		t.Fatal("never ended")
	}
	want := []error{task.ErrInvalidArgument, task.ErrDataTooLarge, task.ErrInvalidPath, task.ErrInvalidArgument, nil}
	if len(errs) != len(want) {
		t.Fatalf("errors %v", errs)
	}
	for i, e := range want {
		if (e == nil) != (errs[i] == nil) || (e != nil && !errors.Is(errs[i], e)) {
			t.Errorf("call %d: %v, want %v", i, errs[i], e)
		}
	}
}

// HOLDS (no existing test checks these): a Client call with an ended ctx
// fails with ErrCanceled and creates nothing; an acquire in a directory
// whose ACL refuses reads (the listing) fails with task.ErrNoAuth and
// leaves no node (the cleanup deletes it); a blocking call on the
// executor's goroutine fails at once with executor.ErrOnExecutor.
func TestClientRefusals(t *testing.T) {
	w, _ := newWorld(t, 1)
	noRead := []task.ACL{{Perms: task.PermAll &^ task.PermRead, Scheme: "world", ID: "anyone"}}
	acl := task.ACLProvider(func(p string) []task.ACL {
		if p == "/rw" {
			return noRead
		}
		return nil
	})
	cl, err := rwlock.NewClient(w.Execs[0], "/rw", rwlock.WithACL(acl))
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	over := make(chan struct{})
	w.Go(0, func(a *sim.Actor) {
		defer close(over)
		ctx, cancel := a.WithCancel(a.Context())
		cancel()
		for _, f := range []func(context.Context) (*rwlock.Held, error){cl.Acquire, cl.TryAcquireRead} {
			_, err := f(ctx)
			errs = append(errs, err)
		}
		for _, f := range []func(context.Context) (*rwlock.Held, error){cl.Acquire, cl.TryAcquire} {
			_, err := f(a.Context())
			errs = append(errs, err)
		}
	})
	if !w.Settle(func() bool { return isClosed(over) }) {
		t.Fatal("never ended")
	}
	w.Drive()
	var onEx error
	ran := sim.Submit(w, 0, task.Func(func(*task.Scope) (task.Unit, error) {
		_, onEx = cl.AcquireRead(context.Background())
		return task.Unit{}, nil
	}))
	w.Drive()
	errs = append(errs, onEx)
	want := []error{task.ErrCanceled, task.ErrCanceled, task.ErrNoAuth, task.ErrNoAuth, executor.ErrOnExecutor}
	if !ran.Done || len(errs) != len(want) {
		t.Fatalf("errors %v", errs)
	}
	for i, e := range want {
		if !errors.Is(errs[i], e) {
			t.Errorf("call %d: %v, want %v", i, errs[i], e)
		}
	}
	if got := w.Children("/rw"); len(got) != 0 {
		t.Errorf("nodes left: %v", got)
	}
	noReportedErrors(t, w)
}

// Package doc: "an acquire that ends in any way but success (deadline,
// cancel, error) leaves none either"; Client.TryAcquireRead "takes the read
// lock only if no writer is queued below it"; Client's doc: the Client
// refuses what would queue behind its own node.
//
// Client 1 holds the read lock. The Client on client 0 waits in Acquire
// (write) behind it; its ctx is canceled; the cleanup's delete of the write
// node is sent and the connection drops before the server applies it.
// Acquire returns ErrCanceled with its write node still in the directory,
// and the cleanup is not counted in the Client's pending give-backs (only
// Release is), so the Client's next TryAcquireRead, with only a reader
// holding, fails with ErrBusy "behind" the Client's own abandoned writer.
// The cleanup is counted now (zkops.CleanupOnError), and the next acquire
// waits for it.
func TestCanceledAcquireLeavesNoNodeInTheClientsWay(t *testing.T) {
	w, _ := newWorld(t, 2)
	l := mustLock(t, "/rw")
	if _, err := mustRun(t, w, 1, l.AcquireRead()); err != nil {
		t.Fatal(err)
	}
	cl, err := rwlock.NewClient(w.Execs[0], "/rw")
	if err != nil {
		t.Fatal(err)
	}
	var cancel context.CancelFunc
	var acqErr, tryErr error
	var left []string
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
		var h *rwlock.Held
		h, tryErr = cl.TryAcquireRead(a.Context())
		if tryErr == nil {
			_ = cl.Release(a.Context(), h)
		}
	})
	w.Settle(func() bool { return len(w.Children("/rw")) == 2 })
	w.Interrupt(a, cancel)
	w.Execs[0].RunUntilIdle()        // the cleanup sends its delete
	w.Server.Drop(w.Conns[0], false) // ... which the server never applies
	w.Settle(func() bool { return isClosed(returned) })
	left = w.Children("/rw")
	close(proceed)
	if !w.Settle(func() bool { return isClosed(over) }) {
		t.Fatal("actor never ended")
	}
	if !errors.Is(acqErr, task.ErrCanceled) {
		t.Fatalf("Acquire after cancel: %v", acqErr)
	}
	if tryErr != nil {
		t.Fatalf("TryAcquireRead with only a reader holding = %v; the directory when the canceled Acquire returned: %v", tryErr, left)
	}
}

// The same class (the Client queues behind its own earlier node), after a
// loss: the Client's write hold is lost because an operator wrote its node;
// the hold's node is deleted by a flow the Client does not wait for
// (zkops.Holding.Lose), and a connection blip delays it. The Client's next
// TryAcquire, with no other contender at all, fails with ErrBusy "taken
// by another contender", behind the Client's own lost node. (Weaker
// doc basis than the test above: ErrBusy "found that it would have to
// wait"; the Client's refusal rules say it never queues behind its own
// node.) The delete is counted now (zkops.Holding.Count), from before
// Done closes, and the next acquire waits for it.
func TestLostHoldsNodeIsNotInTheClientsWay(t *testing.T) {
	w, _ := newWorld(t, 1)
	cl, err := rwlock.NewClient(w.Execs[0], "/rw")
	if err != nil {
		t.Fatal(err)
	}
	var h *rwlock.Held
	var acqErr, tryErr error
	held, over := make(chan struct{}), make(chan struct{})
	w.Go(0, func(a *sim.Actor) {
		defer close(over)
		h, acqErr = cl.Acquire(a.Context())
		close(held)
		if acqErr != nil || a.Wait(a.Context(), h.Done()) != nil {
			return
		}
		var h2 *rwlock.Held
		h2, tryErr = cl.TryAcquire(a.Context())
		if tryErr == nil {
			_ = cl.Release(a.Context(), h2)
		}
	})
	w.Settle(func() bool { return isClosed(held) })
	if acqErr != nil {
		t.Fatal(acqErr)
	}
	_ = h.Err() // the node watch
	w.Drive()
	if err := w.Server.AdminSetData(h.Path(), []byte("operator")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10 && !isClosed(h.Done()); i++ {
		w.Server.RunUntilIdle()
		w.Execs[0].RunUntilIdle()
	}
	if !isClosed(h.Done()) {
		t.Fatal("the loss was not heard")
	}
	w.Server.Drop(w.Conns[0], false) // the lost node's delete is in flight
	if !w.Settle(func() bool { return isClosed(over) }) {
		t.Fatal("actor never ended")
	}
	if tryErr != nil {
		t.Fatalf("TryAcquire with no other contender, after the Client's hold was lost: %v", tryErr)
	}
}

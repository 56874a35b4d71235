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
// first test fails on the code before its fix; the other two held, and
// check what no other test does.

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

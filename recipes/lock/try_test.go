package lock_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/lock"
)

// TryAcquire takes a free lock; with the lock held, or held and waited
// for, it fails with ErrBusy at once and leaves no node behind, and the
// holder and the waiter are untouched.
func TestTryAcquire(t *testing.T) {
	w, _ := newWorld(t, 1, 4, fakezk.Config{})
	l, err := lock.New("/try")
	if err != nil {
		t.Fatal(err)
	}
	h, err := mustRun(t, w, 0, l.TryAcquire())
	if err != nil {
		t.Fatalf("TryAcquire of a free lock: %v", err)
	}
	if _, ok := w.NodeStat(h.Path()); !ok {
		t.Fatalf("holder's node %s missing", h.Path())
	}
	if _, err := mustRun(t, w, 1, l.TryAcquire()); !errors.Is(err, lock.ErrBusy) {
		t.Fatalf("TryAcquire of a held lock = %v, want ErrBusy", err)
	}
	waited := make(chan error, 1)
	executor.Submit(w.Execs[2], l.Acquire(), func(_ *lock.Held, err error) { waited <- err })
	w.Settle(func() bool { return len(contenders(w, "/try")) == 2 })
	if _, err := mustRun(t, w, 3, l.TryAcquire()); !errors.Is(err, lock.ErrBusy) {
		t.Fatalf("TryAcquire behind a holder and a waiter = %v, want ErrBusy", err)
	}
	w.Settle(func() bool { return false })
	if got := contenders(w, "/try"); len(got) != 2 {
		t.Fatalf("contenders after two busy tries: %v, want the holder's and the waiter's", got)
	}
	if !h.IsHeld() {
		t.Fatal("the holder lost its lock")
	}
	if _, err := mustRun(t, w, 0, h.Release()); err != nil {
		t.Fatal(err)
	}
	w.Settle(func() bool { return len(waited) == 1 })
	if err := <-waited; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
}

// A Client is not re-entrant: Acquire or TryAcquire on a Client that holds
// the lock fails at once with ErrAlreadyHeld (it would wait behind itself);
// after Release it acquires again. TryAcquire on another Client fails with
// ErrBusy and leaves no node.
func TestClientTryAcquireAndReentry(t *testing.T) {
	srv, run, mutex := asyncClients(t, "/m")
	contenders := func() int {
		n := 0
		for _, p := range srv.Paths() {
			if strings.HasPrefix(p, "/m/") {
				n++
			}
		}
		return n
	}
	a, b := mutex(1), mutex(2)
	h, err := a.TryAcquire(run)
	if err != nil {
		t.Fatalf("TryLock of a free lock: %v", err)
	}
	if _, err := a.Acquire(run); !errors.Is(err, lock.ErrAlreadyHeld) {
		t.Fatalf("second Lock on the holding Mutex = %v, want ErrAlreadyHeld", err)
	}
	if _, err := a.TryAcquire(run); !errors.Is(err, lock.ErrAlreadyHeld) {
		t.Fatalf("TryLock on the holding Mutex = %v, want ErrAlreadyHeld", err)
	}
	if _, err := b.TryAcquire(run); !errors.Is(err, lock.ErrBusy) {
		t.Fatalf("TryLock on another Mutex = %v, want ErrBusy", err)
	}
	if n := contenders(); n != 1 {
		t.Fatalf("%d contender nodes, want the holder's only", n)
	}
	if err := a.Release(run, h); err != nil {
		t.Fatal(err)
	}
	h2, err := a.Acquire(run)
	if err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	if err := a.Release(run, h2); err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryAcquire(run); err != nil {
		t.Fatalf("TryLock once free: %v", err)
	}
}

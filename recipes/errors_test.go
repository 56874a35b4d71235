package recipes_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start runs an executor on a new session of srv until the test ends.
func start(t *testing.T, srv *fakezk.Server) *executor.Executor {
	t.Helper()
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{})})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(context.Background()) }()
	t.Cleanup(func() { ex.Close(); <-done })
	return ex
}

// One errors.Is answers "taken by someone else", "held by me already" and
// "no longer mine" whichever recipe the error came from: each case below
// is produced by a recipe, and checked against the shared sentinel, not
// the recipe's own name for it.
func TestSharedErrorsAcrossRecipes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := fakezk.New(fakezk.Config{})
	defer srv.Close()
	a, b := start(t, srv), start(t, srv)

	// Busy and already held: lock, rwlock, semaphore.
	la, _ := lock.NewClient(a, "/l")
	lb, _ := lock.NewClient(b, "/l")
	held, err := la.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lb.TryAcquire(ctx); !errors.Is(err, recipes.ErrBusy) {
		t.Errorf("lock TryAcquire while held elsewhere: %v, want recipes.ErrBusy", err)
	}
	if _, err := la.TryAcquire(ctx); !errors.Is(err, recipes.ErrAlreadyHeld) {
		t.Errorf("lock TryAcquire while held here: %v, want recipes.ErrAlreadyHeld", err)
	}
	ra, _ := rwlock.NewClient(a, "/rw")
	rb, _ := rwlock.NewClient(b, "/rw")
	if _, err := ra.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rb.TryAcquireRead(ctx); !errors.Is(err, recipes.ErrBusy) {
		t.Errorf("rwlock TryAcquireRead behind a writer: %v, want recipes.ErrBusy", err)
	}
	if _, err := ra.AcquireRead(ctx); !errors.Is(err, recipes.ErrAlreadyHeld) {
		t.Errorf("rwlock AcquireRead while writing: %v, want recipes.ErrAlreadyHeld", err)
	}
	sa, _ := semaphore.NewClient(a, "/s", 1)
	sb, _ := semaphore.NewClient(b, "/s", 1)
	lease, err := sa.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.TryAcquire(ctx); !errors.Is(err, recipes.ErrBusy) {
		t.Errorf("semaphore TryAcquire with no lease free: %v, want recipes.ErrBusy", err)
	}

	// Lost: an operator deletes the lock node, the lease node and the
	// leader's candidate node.
	ea, _ := election.NewClient(a, "/e")
	lead, err := ea.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []struct {
		what string
		path string
		done <-chan struct{}
		err  func() error
	}{
		{"lock", held.Path(), held.Done(), held.Err},
		{"semaphore lease", lease.Path(), lease.Done(), lease.Err},
		{"leadership", lead.Path(), lead.Done(), lead.Err},
	} {
		if _, err := executor.Await(ctx, b, task.Delete(h.path, task.AnyVersion)); err != nil {
			t.Fatalf("deleting the %s node: %v", h.what, err)
		}
		select {
		case <-h.done:
		case <-ctx.Done():
			t.Fatalf("%s: not ended after its node was deleted", h.what)
		}
		if err := h.err(); !errors.Is(err, recipes.ErrLost) {
			t.Errorf("%s after its node was deleted: %v, want recipes.ErrLost", h.what, err)
		}
	}

	// The recipes' own names are the shared values.
	for _, e := range []error{lock.ErrBusy, rwlock.ErrBusy, semaphore.ErrBusy} {
		if e != recipes.ErrBusy {
			t.Errorf("%v is not recipes.ErrBusy", e)
		}
	}
	for _, e := range []error{lock.ErrLockLost, rwlock.ErrLockLost, semaphore.ErrLeaseLost, election.ErrLost, partition.ErrLost} {
		if e != recipes.ErrLost {
			t.Errorf("%v is not recipes.ErrLost", e)
		}
	}
}

package rwlock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/recipes/internal/acltest"
	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/task"
)

// A Release whose delete an ACL refuses fails with task.ErrNoAuth, and
// the delete goes on in the background until the ACL lets it. Once the
// ACL is back, the Client's next try, with nobody else in the directory,
// takes the lock: it waits for that delete as for the Client's other
// deletes in the background, rather than find the Client's own released
// node ahead of it (ErrBusy). A released read node is in the way of a
// TryAcquire, a released write node of both tries.
func TestTryAfterRefusedRelease(t *testing.T) {
	for _, tc := range []struct {
		name        string
		held, tried rwlock.Mode
	}{
		{"write then write", rwlock.Write, rwlock.Write},
		{"read then write", rwlock.Read, rwlock.Write},
		{"write then read", rwlock.Write, rwlock.Read},
	} {
		t.Run(tc.name, func(t *testing.T) {
			canarytest.Both(t, "rwlock/refused-release-uncounted", func(t *testing.T, bug bool) {
				tryAfterRefusedRelease(t, tc.held, tc.tried, bug)
			})
		})
	}
}

func tryAfterRefusedRelease(t *testing.T, held, tried rwlock.Mode, bug bool) {
	relErr, tryErr, left := acltest.TryAfterRefusedRelease(t, "/rw", func(ex *executor.Executor) (acltest.Holder, error) {
		cl, err := rwlock.NewClient(ex, "/rw")
		if err != nil {
			return acltest.Holder{}, err
		}
		acquire, try := cl.Acquire, cl.TryAcquire
		if held == rwlock.Read {
			acquire = cl.AcquireRead
		}
		if tried == rwlock.Read {
			try = cl.TryAcquireRead
		}
		var h *rwlock.Held
		return acltest.Holder{
			Acquire: func(ctx context.Context) (err error) { h, err = acquire(ctx); return err },
			Release: func(ctx context.Context) error { return cl.Release(ctx, h) },
			Try:     func(ctx context.Context) (err error) { h, err = try(ctx); return err },
		}, nil
	})
	if !errors.Is(relErr, task.ErrNoAuth) {
		t.Errorf("Release with its delete refused = %v, want task.ErrNoAuth", relErr)
	}
	if busy := errors.Is(tryErr, rwlock.ErrBusy); busy != bug || !bug && tryErr != nil {
		t.Errorf("try with the lock free = %v (canary %v); the directory when the ACL came back: %v", tryErr, bug, left)
	}
}

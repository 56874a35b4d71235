package lock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/recipes/internal/acltest"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// A Release whose delete an ACL refuses fails with task.ErrNoAuth, and
// the delete goes on in the background until the ACL lets it. Once the
// ACL is back, the Client's next TryAcquire, with nobody else in the
// directory, takes the lock: it waits for that delete as for the Client's
// other deletes in the background, rather than find the Client's own
// released node ahead of it (ErrBusy).
func TestTryAfterRefusedRelease(t *testing.T) {
	canarytest.Both(t, "lock/refused-release-uncounted", func(t *testing.T, bug bool) {
		relErr, tryErr, left := acltest.TryAfterRefusedRelease(t, "/lk", func(ex *executor.Executor) (acltest.Holder, error) {
			cl, err := lock.NewClient(ex, "/lk")
			if err != nil {
				return acltest.Holder{}, err
			}
			var h *lock.Held
			return acltest.Holder{
				Acquire: func(ctx context.Context) (err error) { h, err = cl.Acquire(ctx); return err },
				Release: func(ctx context.Context) error { return cl.Release(ctx, h) },
				Try:     func(ctx context.Context) (err error) { h, err = cl.TryAcquire(ctx); return err },
			}, nil
		})
		if !errors.Is(relErr, task.ErrNoAuth) {
			t.Errorf("Release with its delete refused = %v, want task.ErrNoAuth", relErr)
		}
		if busy := errors.Is(tryErr, lock.ErrBusy); busy != bug || !bug && tryErr != nil {
			t.Errorf("TryAcquire with the lock free = %v (canary %v); the directory when the ACL came back: %v", tryErr, bug, left)
		}
	})
}

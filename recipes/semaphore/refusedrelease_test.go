package semaphore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/recipes/internal/acltest"
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/task"
)

// A Release whose delete an ACL refuses fails with task.ErrNoAuth, and
// the delete goes on in the background until the ACL lets it. Once the
// ACL is back, the Client's next TryAcquire, with no other lease taken,
// takes the semaphore's one lease: it waits for that delete as for the
// Client's other deletes in the background, rather than count its own
// released node as a lease taken (ErrBusy).
func TestTryAfterRefusedRelease(t *testing.T) {
	canarytest.Both(t, "semaphore/refused-release-uncounted", func(t *testing.T, bug bool) {
		relErr, tryErr, left := acltest.TryAfterRefusedRelease(t, "/s/leases", func(ex *executor.Executor) (acltest.Holder, error) {
			cl, err := semaphore.NewClient(ex, "/s", 1)
			if err != nil {
				return acltest.Holder{}, err
			}
			var l *semaphore.Lease
			return acltest.Holder{
				Acquire: func(ctx context.Context) (err error) { l, err = cl.Acquire(ctx); return err },
				Release: func(ctx context.Context) error { return cl.Release(ctx, l) },
				Try:     func(ctx context.Context) (err error) { l, err = cl.TryAcquire(ctx); return err },
			}, nil
		})
		if !errors.Is(relErr, task.ErrNoAuth) {
			t.Errorf("Release with its delete refused = %v, want task.ErrNoAuth", relErr)
		}
		if busy := errors.Is(tryErr, semaphore.ErrBusy); busy != bug || !bug && tryErr != nil {
			t.Errorf("TryAcquire with every lease free = %v (canary %v); the leases when the ACL came back: %v", tryErr, bug, left)
		}
	})
}

package rwlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
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
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1, Wrap: sim.ReadOnlyBeforeDelete(0, "/rw")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	var relErr, tryErr error
	var left []string
	done := false
	w.Go(0, func(a *sim.Actor) {
		defer func() { done = true }()
		cl, err := rwlock.NewClient(a.Exec(), "/rw")
		if err != nil {
			t.Error(err)
			return
		}
		acquire, try := cl.Acquire, cl.TryAcquire
		if held == rwlock.Read {
			acquire = cl.AcquireRead
		}
		if tried == rwlock.Read {
			try = cl.TryAcquireRead
		}
		h, err := acquire(a.Context())
		if err != nil {
			t.Error(err)
			return
		}
		relErr = cl.Release(a.Context(), h)
		if err := a.Sleep(a.Context(), time.Second); err != nil {
			t.Error(err)
		}
		if err := w.Server.AdminSetACL("/rw", task.OpenACL); err != nil {
			t.Error(err)
		}
		left = w.Children("/rw")
		h, tryErr = try(a.Context())
		if tryErr == nil {
			_ = cl.Release(a.Context(), h)
		}
	})
	if !w.Settle(func() bool { return done }) {
		t.Fatal("stuck")
	}
	if !errors.Is(relErr, task.ErrNoAuth) {
		t.Errorf("Release with its delete refused = %v, want task.ErrNoAuth", relErr)
	}
	if busy := errors.Is(tryErr, rwlock.ErrBusy); busy != bug || !bug && tryErr != nil {
		t.Errorf("try with the lock free = %v (canary %v); the directory when the ACL came back: %v", tryErr, bug, left)
	}
}

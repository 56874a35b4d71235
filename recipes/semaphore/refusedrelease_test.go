package semaphore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
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
	canarytest.Both(t, "semaphore/refused-release-uncounted", func(t *testing.T, bug bool) { tryAfterRefusedRelease(t, bug) })
}

func tryAfterRefusedRelease(t *testing.T, bug bool) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1, Wrap: sim.ReadOnlyBeforeDelete(0, "/s/leases")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	var relErr, tryErr error
	var left []string
	done := false
	w.Go(0, func(a *sim.Actor) {
		defer func() { done = true }()
		cl, err := semaphore.NewClient(a.Exec(), "/s", 1)
		if err != nil {
			t.Error(err)
			return
		}
		l, err := cl.Acquire(a.Context())
		if err != nil {
			t.Error(err)
			return
		}
		relErr = cl.Release(a.Context(), l)
		if err := a.Sleep(a.Context(), time.Second); err != nil {
			t.Error(err)
		}
		if err := w.Server.AdminSetACL("/s/leases", task.OpenACL); err != nil {
			t.Error(err)
		}
		left = w.Children("/s/leases")
		l, tryErr = cl.TryAcquire(a.Context())
		if tryErr == nil {
			_ = cl.Release(a.Context(), l)
		}
	})
	if !w.Settle(func() bool { return done }) {
		t.Fatal("stuck")
	}
	if !errors.Is(relErr, task.ErrNoAuth) {
		t.Errorf("Release with its delete refused = %v, want task.ErrNoAuth", relErr)
	}
	if busy := errors.Is(tryErr, semaphore.ErrBusy); busy != bug || !bug && tryErr != nil {
		t.Errorf("TryAcquire with every lease free = %v (canary %v); the leases when the ACL came back: %v", tryErr, bug, left)
	}
}

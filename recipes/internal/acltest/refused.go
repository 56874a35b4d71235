package acltest

import (
	"context"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// Holder is what TryAfterRefusedRelease drives of a recipe's Client:
// Acquire takes a hold and Release gives back the last hold taken; Try
// tries once and, if it succeeds, keeps its hold for Release.
type Holder struct {
	Acquire, Release, Try func(context.Context) error
}

// TryAfterRefusedRelease runs, on the one client of a world whose
// connection has every delete under dir refused until an operator opens
// dir's ACL (sim.ReadOnlyBeforeDelete), a Client made by client: Acquire,
// then Release (its delete refused: it goes on in the background), then,
// a second later, the operator opens the ACL and the Client Trys (and
// Releases what it got). It returns Release's and Try's errors and dir's
// children as the ACL came back. A Client that counts a refused delete
// among its deletes in the background waits for it before it tries, and
// finds nobody ahead of it.
func TryAfterRefusedRelease(t *testing.T, dir string, client func(*executor.Executor) (Holder, error)) (relErr, tryErr error, left []string) {
	t.Helper()
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1, Wrap: sim.ReadOnlyBeforeDelete(0, dir)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	done := false
	w.Go(0, func(a *sim.Actor) {
		defer func() { done = true }()
		h, err := client(a.Exec())
		if err != nil {
			t.Error(err)
			return
		}
		if err := h.Acquire(a.Context()); err != nil {
			t.Error(err)
			return
		}
		relErr = h.Release(a.Context())
		if err := a.Sleep(a.Context(), time.Second); err != nil {
			t.Error(err)
		}
		if err := w.Server.AdminSetACL(dir, task.OpenACL); err != nil {
			t.Error(err)
		}
		left = w.Children(dir)
		if tryErr = h.Try(a.Context()); tryErr == nil {
			_ = h.Release(a.Context())
		}
	})
	if !w.Settle(func() bool { return done }) {
		t.Fatal("stuck")
	}
	return relErr, tryErr, left
}

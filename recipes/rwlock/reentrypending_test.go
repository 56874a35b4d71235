package rwlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/rwlock"
)

// An upgrade is refused at once with ErrAlreadyHeld, also while a
// release of the Client's goes on in the background: two read locks,
// the connection cut, one released with a context that has ended (its
// delete waits for the reconnect); Acquire returns at the same instant of
// the clock, not once the delete is done.
func TestUpgradeRefusedAtOnceWhileADeleteIsPending(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	var waited time.Duration
	var acqErr error
	done := false
	w.Go(0, func(a *sim.Actor) {
		defer func() { done = true }()
		m, err := rwlock.NewClient(a.Exec(), "/m")
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := m.AcquireRead(a.Context()); err != nil {
			t.Error(err)
			return
		}
		r2, err := m.AcquireRead(a.Context())
		if err != nil {
			t.Error(err)
			return
		}
		w.Server.Partition(w.Conns[0], 3*time.Second, false)
		ended, cancel := context.WithCancel(a.Context())
		cancel()
		if err := m.Release(ended, r2); !errors.Is(err, context.Canceled) {
			t.Errorf("Release with an ended context: %v", err)
		}
		start := w.Clock.Now()
		_, acqErr = m.Acquire(a.Context())
		waited = w.Clock.Now().Sub(start)
	})
	if !w.Settle(func() bool { return done }) {
		t.Fatal("stuck")
	}
	if !errors.Is(acqErr, rwlock.ErrAlreadyHeld) || waited != 0 {
		t.Errorf("Acquire (an upgrade) with a release pending: %v after %v of the clock; want ErrAlreadyHeld at once", acqErr, waited)
	}
}

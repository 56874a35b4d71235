package barrier_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
)

// A DoubleClient's Leave of an earlier participant, given to Leave again
// (the doc lets a Leave whose context ended be called again), does not
// let the next Enter in while the current participant has not been given
// to Leave: that Enter would make a second node of the session, counted
// twice. With any participant's Leave letting it in (the canary), it
// does.
func TestDoubleLeaveAgainOfAnEarlierParticipant(t *testing.T) {
	canarytest.Both(t, "barrier/double-leave-again-lets-in", func(t *testing.T, bug bool) {
		w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Close)
		var third error
		done := false
		w.Go(0, func(a *sim.Actor) {
			defer func() { done = true }()
			d, err := barrier.NewDoubleClient(a.Exec(), "/db", 1)
			if err != nil {
				t.Error(err)
				return
			}
			ended, cancel := context.WithCancel(a.Context())
			cancel()
			p1, err := d.Enter(a.Context())
			if err != nil {
				t.Error(err)
				return
			}
			_ = d.Leave(ended, p1) // its delete goes on in the background
			if _, err := d.Enter(a.Context()); err != nil {
				t.Error(err)
				return
			}
			_ = d.Leave(ended, p1) // again, as the doc allows
			_, third = d.Enter(a.Context())
		})
		if !w.Settle(func() bool { return done }) {
			t.Fatal("stuck")
		}
		if refused := errors.Is(third, task.ErrInvalidArgument); refused == bug {
			t.Errorf("third Enter, the second participant not given to Leave: %v (canary %v); participants %v", third, bug, w.Children("/db"))
		}
	})
}

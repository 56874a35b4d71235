package election_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/election"
)

// Under a simulation, the goroutine the blocking Observe starts to close
// its channel is one of the world's actors: it runs in lockstep with the
// world (a seed stays one history), and driving the world alone closes
// the channel once the observer's ctx has ended.
func TestObserveCloserIsAnActor(t *testing.T) {
	w, _ := newWorld(t, 1, 1, fakezk.Config{})
	e := mustElection(t, "/svc/obs")
	var ch <-chan election.Observation
	var obsErr error
	var cancel func()
	returned := false
	w.Go(0, func(a *sim.Actor) {
		ctx, c := a.WithCancel(a.Context())
		cancel = c
		ch, obsErr = election.ClientOf(w.Execs[0], e).Observe(ctx)
		returned = true
	})
	if !w.Settle(func() bool { return returned }) || obsErr != nil {
		t.Fatalf("Observe: returned %v, %v", returned, obsErr)
	}
	w.Settle(func() bool { return w.Actors() == 1 })
	if n := w.Actors(); n != 1 {
		t.Fatalf("%d actors once Observe's caller ended, want 1: the goroutine that closes the channel is not the world's", n)
	}
	cancel()
	closed := func() bool { // (takes the observations still in the channel)
		for {
			select {
			case _, ok := <-ch:
				if !ok {
					return true
				}
			default:
				return false
			}
		}
	}
	if !w.Settle(func() bool { return closed() && w.Actors() == 0 }) {
		t.Fatalf("the world ran to its end and Observe's channel is not closed (actors left: %d)", w.Actors())
	}
}

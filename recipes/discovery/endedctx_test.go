package discovery_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/task"
)

// A Register whose ctx has ended returns its error at once, as every
// blocking call does (blocking.Take: nothing is submitted), also while
// the Client has an Unregister going on in the background, which a
// Register with a live ctx waits for: it does not wait for it first.
// In a simulation, where a goroutine that waits hands the turn to the
// world and may wake late (sim.Config.ActorLag), such a wait let
// simulated time pass before the call returned (seed 2 of
// TestBlockingSimulation: 69ms).
func TestRegisterWithAnEndedContextReturnsAtOnce(t *testing.T) {
	const base, name, id = "/rsvc", "web", "w1"
	path := base + "/" + name + "/" + id
	// The background Unregister's delete cut, not applied: it goes on
	// until the reconnect, and the Client's unregistering with it.
	cut := &sim.Cutter{Match: sim.Deletes(path)}
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1, ActorLag: true, Wrap: func(_ int, c *fakezk.Conn) task.Conn { return cut.Wrap(c) }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cut.World = w
	c, err := discovery.NewClient(w.Execs[0], base)
	if err != nil {
		t.Fatal(err)
	}
	inst := discovery.Instance{Name: name, ID: id, Address: "10.0.0.1", Port: 80, ServiceType: discovery.Static}
	done := false
	w.Go(0, func(a *sim.Actor) {
		defer func() { done = true }()
		ctx := a.Context()
		reg, err := c.Register(ctx, inst)
		if err != nil {
			t.Errorf("Register: %v", err)
			return
		}
		cut.Armed = true
		ended, cancel := a.WithCancel(ctx)
		cancel()
		if err := c.Unregister(ended, reg); !errors.Is(err, context.Canceled) {
			t.Errorf("Unregister with an ended ctx = %v, want its error", err)
			return
		}
		for k := range 40 {
			t0 := w.Clock.Now()
			_, err := c.Register(ended, inst)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Register %d with an ended ctx = %v, want its error", k, err)
				return
			}
			if d := w.Clock.Now().Sub(t0); d != 0 {
				t.Errorf("Register %d with an ended ctx returned %v after %v: it waited", k, err, d)
				return
			}
		}
	})
	if !w.Settle(func() bool { return done }) {
		t.Fatal("the actor never finished")
	}
}

package discovery_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/task"
)

// A Static instance's Unregister whose ctx ended during an outage goes on
// in the background: its delete was applied and its reply lost, so it is
// sent again after the reconnect. A Register of the instance on the same
// Client after it waits for that delete first: the node it makes stays,
// instead of being deleted by the earlier Unregister after Register
// returned nil.
func TestRegisterAfterABackgroundUnregisterStays(t *testing.T) {
	const base, name, id = "/rsvc", "web", "w1"
	path := base + "/" + name + "/" + id
	cut := &sim.Cutter{Match: sim.Deletes(path), Applied: true, For: 500 * time.Millisecond}
	w, err := sim.New(sim.Config{Seed: 3, Clients: 1, Wrap: func(_ int, c *fakezk.Conn) task.Conn { return cut.Wrap(c) }})
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
	var unregErr, regErr error
	registeredAgain := false
	w.Go(0, func(a *sim.Actor) {
		ctx := a.Context()
		reg, err := c.Register(ctx, inst)
		if err != nil {
			t.Errorf("first Register: %v", err)
			return
		}
		cut.Armed = true
		// The delete is sent, applied, and the connection is cut for
		// 500ms: this ctx ends after 100ms, inside the outage.
		uctx, cancel := a.WithTimeout(ctx, 100*time.Millisecond)
		unregErr = c.Unregister(uctx, reg)
		cancel()
		// Register again, at once (the caller was told the unregister
		// goes on in the background).
		_, regErr = c.Register(ctx, inst)
		registeredAgain = true
	})
	if !w.Settle(func() bool { return registeredAgain }) {
		t.Fatal("the actor never finished")
	}
	if !cut.Cut {
		t.Fatal("the delete was not cut: the test checks nothing")
	}
	t.Logf("Unregister = %v; Register again = %v", unregErr, regErr)
	if regErr != nil {
		t.Fatalf("second Register = %v", regErr)
	}
	_, there := w.Server.NodeStat(path)
	t.Logf("right after the second Register returned nil: node there = %v", there)
	// Let time pass (well within any timeout): the background work ends.
	until := w.Clock.Now().Add(2 * time.Second)
	w.Settle(func() bool { return !w.Clock.Now().Before(until) })
	if _, ok := w.Server.NodeStat(path); !ok {
		t.Fatalf("%s is gone 2s after Register returned nil: the earlier Unregister, still going on in the background, deleted the new registration", path)
	}
}

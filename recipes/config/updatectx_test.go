package config_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/config"
)

// Client.Update's doc: when ctx ends first, Update returns ctx's error
// and says nothing more: the multi may have been applied. Here it was:
// its reply was lost to a cut (the request applied), and the caller gave
// up while the Client waited for the reconnect. The values are on the
// server all the same, and the same Update again leaves them as they are.
func TestClientUpdateCtxEndAfterTheMultiWasApplied(t *testing.T) {
	w := rvWorld(t, 1)
	cl, err := config.NewClient(w.Execs[0], "/cfg")
	if err != nil {
		t.Fatal(err)
	}
	values := map[string][]byte{"v": []byte("2"), "w": []byte("2")}
	var cancel context.CancelFunc
	var upErr error
	done := false
	a := w.Go(0, func(a *sim.Actor) {
		ctx, cc := a.WithCancel(a.Context())
		cancel = cc
		defer cc()
		upErr = cl.Update(ctx, values)
		done = true
	})
	// Step until the server has applied the multi, then cut the client
	// off before it hears the reply (applied: the reply is lost).
	for range 1000 {
		if data(w, "/cfg/w") == "2" || done {
			break
		}
		w.Step()
	}
	if done || data(w, "/cfg/w") != "2" {
		t.Fatalf("the multi was not applied while Update waited (done %v, w=%s)", done, data(w, "/cfg/w"))
	}
	w.Server.Partition(w.Conns[0], time.Second, true)
	w.Interrupt(a, cancel)
	if !w.Settle(func() bool { return done }) {
		t.Fatal("Update never returned after its ctx ended")
	}
	if !errors.Is(upErr, context.Canceled) {
		t.Fatalf("Update: %v, want ctx's error", upErr)
	}
	if data(w, "/cfg/v") != "2" || data(w, "/cfg/w") != "2" {
		t.Fatalf("v=%s w=%s: the multi applied before ctx ended is not on the server", data(w, "/cfg/v"), data(w, "/cfg/w"))
	}
	if err := func() error {
		var err error
		ok := false
		w.Go(0, func(a *sim.Actor) { err = cl.Update(a.Context(), values); ok = true })
		if !settleFor(w, time.Minute, func() bool { return ok }) {
			return errors.New("the second Update never returned")
		}
		return err
	}(); err != nil {
		t.Fatalf("the same Update again: %v", err)
	}
	if data(w, "/cfg/v") != "2" || data(w, "/cfg/w") != "2" {
		t.Fatalf("v=%s w=%s after the same Update again", data(w, "/cfg/v"), data(w, "/cfg/w"))
	}
}

package masterworker_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// Client.Wait waits across session expiries until its context ends: a
// context that ends as the session expires (canceled by the executor's
// own report of the expiry, before the waiting goroutine runs again) ends
// the Wait with the context's error, not with the expiry the doc says the
// caller never sees (masterworker/blocking seed 19, with its submitters'
// contexts ending: Wait returned task.ErrSessionExpired).
func TestWaitContextEndingAtExpiry(t *testing.T) {
	w, sys := setupWorld(t, sim.Config{Seed: 1, Clients: 1})
	cl, err := sys.NewClient(w.Execs[0], "c")
	if err != nil {
		t.Fatal(err)
	}
	var name string
	var waitErr error
	done := false
	w.Go(0, func(a *sim.Actor) {
		defer func() { done = true }()
		n, err := cl.Submit(a.Context(), []byte("x")) // no worker: no status, ever
		if err != nil {
			waitErr = err
			return
		}
		name = n
		ctx, cancel := a.WithCancel(a.Context())
		defer cancel()
		w.Execs[0].Subscribe(func(ev task.Event) {
			if ev.State == task.StateExpired {
				cancel()
			}
		})
		_, waitErr = cl.Wait(ctx, name)
	})
	w.Settle(func() bool { return name != "" || done })
	if name == "" {
		t.Fatalf("Submit: %v", waitErr)
	}
	w.Server.Expire(w.Conns[0])
	if !w.Settle(func() bool { return done }) {
		t.Fatal("Wait did not return")
	}
	if !errors.Is(waitErr, task.ErrCanceled) || errors.Is(waitErr, task.ErrSessionExpired) {
		t.Fatalf("Wait: %v, want its context's end (task.ErrCanceled)", waitErr)
	}
}

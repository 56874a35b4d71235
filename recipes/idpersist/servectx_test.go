package idpersist_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/idpersist"
	"github.com/zkflow/zkflow/task"
)

// Replica.Serve returns its context's end when the context has ended,
// not the expiry or the lost leadership that ended the flow at the same
// moment: those are the errors Serve handles itself (it runs for
// election again) and says its caller never sees. Here the context is
// canceled by the executor's own report of the expiry, before the
// goroutine in Serve runs again (idpersist/blocking seed 11 found it with
// ErrDeposed: a goroutine that ran late, its context's deadline passed,
// took the deposition that had ended the flow meanwhile).
func TestServeContextEndingAtExpiry(t *testing.T) {
	w := newWorld(t, 3, 1, fakezk.Config{})
	rep, err := idpersist.NewReplica(w.cfg)
	if err != nil {
		t.Fatal(err)
	}
	var serveErr error
	done := false
	w.Go(0, func(a *sim.Actor) {
		defer func() { done = true }()
		ctx, cancel := a.WithCancel(a.Context())
		defer cancel()
		w.Execs[0].Subscribe(func(ev task.Event) {
			if ev.State == task.StateExpired {
				cancel()
			}
		})
		serveErr = rep.Serve(ctx, a.Exec())
	})
	w.settle(rep.Leading)
	w.Server.Expire(w.Conns[0])
	w.settle(func() bool { return done })
	if !errors.Is(serveErr, task.ErrCanceled) || errors.Is(serveErr, task.ErrSessionExpired) || errors.Is(serveErr, idpersist.ErrDeposed) {
		t.Fatalf("Serve: %v, want its context's end (task.ErrCanceled)", serveErr)
	}
}

package cache

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// cancelAtExpiry has ctx's cancel called by a session subscriber of
// client 0 when its session expires: after the executor has ended the
// session's flows and before their outcomes are delivered, so that a
// blocking call finds both its flow's outcome (task.ErrSessionExpired)
// and its ctx ended.
func cancelAtExpiry(w *sim.World, cancel *context.CancelFunc) func() {
	return must(sim.Run(w, 0, task.Func(func(s *task.Scope) (func(), error) {
		return s.Subscribe(func(ev task.Event) {
			if ev.Type == task.EventNone && ev.State == task.StateExpired && *cancel != nil {
				(*cancel)()
			}
		}), nil
	})))
}

// Client.Start: "If the session expires before that, it waits on ...
// When ctx ends first it returns task.ErrCanceled or
// task.ErrDeadlineExceeded". Schedule: Start reads the directory; at the
// first child read the session is made to expire, and ctx ends as the
// executor tells of the expiry, before Start's flow has its outcome
// (the read of /d/b is still to come).
// Start returned task.ErrSessionExpired, neither ctx's error nor a wait
// on; Next, in the same schedule, returns ctx's error.
func TestClientStartCtxEndingAtAnExpiry(t *testing.T) {
	w := newWorld(t, 2)
	must(sim.Run(w, 1, task.Create("/d", nil, task.Persistent)))
	must(sim.Run(w, 1, task.Create("/d/a", nil, task.Persistent)))
	must(sim.Run(w, 1, task.Create("/d/b", nil, task.Persistent)))
	var cancel context.CancelFunc
	defer cancelAtExpiry(w, &cancel)()
	fired := false
	cl := must(NewChildrenClient(w.Execs[0], "/d", WithOnEvent(func(ev Event) {
		if !fired {
			fired = true
			w.Server.Expire(w.Conns[0])
		}
	})))
	var err error
	done := false
	w.Go(0, func(a *sim.Actor) {
		var ctx context.Context
		ctx, cancel = a.WithCancel(a.Context())
		err = cl.Start(ctx)
		done = true
	})
	if !w.Settle(func() bool { return done }) {
		t.Fatal("Start did not return")
	}
	if !fired {
		t.Fatal("the schedule did not happen: no expiry during Start")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Start whose ctx ended at an expiry: %v; want ctx's error", err)
	}
}

// Client.Next: "it fails with the cache's error once it has ended, or
// with ctx's". The schedule of TestClientStartCtxEndingAtAnExpiry, on a
// waiting Next.
func TestClientNextCtxEndingAtAnExpiry(t *testing.T) {
	w := newWorld(t, 2)
	must(sim.Run(w, 1, task.Create("/d", nil, task.Persistent)))
	var cancel context.CancelFunc
	defer cancelAtExpiry(w, &cancel)()
	cl := must(NewChildrenClient(w.Execs[0], "/d"))
	var err error
	phase := 0
	w.Go(0, func(a *sim.Actor) {
		if err = cl.Start(a.Context()); err != nil {
			phase = -1
			return
		}
		var ctx context.Context
		ctx, cancel = a.WithCancel(a.Context())
		phase = 1
		_, err = cl.Next(ctx)
		phase = 2
	})
	w.Settle(func() bool { return phase != 0 })
	w.Drive()
	if phase != 1 {
		t.Fatalf("setup: phase %d, %v", phase, err)
	}
	w.Server.Expire(w.Conns[0])
	if !w.Settle(func() bool { return phase == 2 }) {
		t.Fatal("Next did not return")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Next whose ctx ended at an expiry: %v (cache's Err %v); want ctx's error", err, cl.Err())
	}
}

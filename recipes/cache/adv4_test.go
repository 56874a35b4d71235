package cache

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/task"
)

// Client.Next says: "A Next that returns ctx's error returns no
// difference: the next Next reports what it would have (also when ctx
// ended just as the difference was handed to it)". The schedule: the
// caller waits in Next; the executor runs the job that reads /d/x and
// hands the new snapshot over; while it runs (in OnSynced, just before
// the hand-over), the caller's ctx ends, and the caller, finding no
// outcome yet, cancels the flow and waits for it to end. The flow ends
// with the difference all the same (the cancel comes after the job):
// Next returns ctx's error, and unless the difference is handed back
// (engine.giveBack; canary cache/next-lost-on-cancel skips it) the
// cache counts it as returned and the next Next never reports /d/x.
//
// The caller is a plain goroutine whose context carries a Parker of the
// test's (internal/park): it tells the test where the caller waits, and
// waits there until the test lets it on, so the interleaving is exact.
// (An earlier version of this test ended the context in OnEvent and let
// the caller look only after the job: since blocking.Take returns an
// outcome already in even when ctx has ended too, that schedule loses
// nothing, with or without the bug.)
func TestAdv4ClientNextCanceledAsChangeArrives(t *testing.T) {
	firstErr, added := nextCanceledAsHandedOver(t)
	if !slices.Contains(added, "/d/x") {
		t.Errorf("Next canceled as /d/x was handed over returned %v; the next Next added %v: /d/x was never reported Added",
			firstErr, added)
	}
}

// nextCanceledAsHandedOver runs the schedule of
// TestAdv4ClientNextCanceledAsChangeArrives: it returns the first Next's
// error and the paths the next Next reported Added.
func nextCanceledAsHandedOver(t *testing.T) (error, []string) {
	t.Helper()
	w := newWorld(t, 2)
	must(sim.Run(w, 1, task.Create("/d", nil, task.Persistent)))
	armed := false
	var cancelNext context.CancelFunc
	p := &stepParker{at: make(chan int), on: make(chan struct{})}
	cl := must(NewChildrenClient(w.Execs[0], "/d", WithOnSynced(func() {
		if !armed {
			return
		}
		armed = false
		// The executor is in the job that hands the snapshot over: the
		// caller's ctx ends now, and the caller looks.
		cancelNext()
		p.on <- struct{}{}
		if n := <-p.at; n != 2 {
			t.Errorf("caller parked at wait %d, want 2 (after it canceled the flow)", n)
		}
	})))
	started := false
	w.Go(0, func(a *sim.Actor) {
		if err := cl.Start(a.Context()); err != nil {
			t.Errorf("start: %v", err)
		}
		started = true
	})
	if !w.Settle(func() bool { return started }) {
		t.Fatal("start did not end")
	}
	e, _ := cl.started()
	if e == nil {
		t.Fatal("not started")
	}
	// Nothing is cached yet: the first Next waits for /d/x.
	ctx, cancel := context.WithCancel(park.NewContext(context.Background(), p))
	defer cancel()
	cancelNext = cancel
	type outcome struct {
		ch  Change
		err error
	}
	out := make(chan outcome, 1)
	go func() {
		ch, err := cl.Next(ctx)
		out <- outcome{ch, err}
	}()
	if n := <-p.at; n != 1 {
		t.Fatalf("caller parked at wait %d, want 1", n)
	}
	w.Drive() // the Next flow starts and waits in the cache
	armed = true
	must(sim.Run(w, 1, task.Create("/d/x", nil, task.Persistent)))
	if armed {
		t.Fatal("no snapshot was handed over")
	}
	p.on <- struct{}{} // the flow has ended: the caller takes its outcome
	first := <-out
	if !errors.Is(first.err, task.ErrCanceled) {
		t.Fatalf("first Next returned %v, %v: want ctx's error", paths(first.ch.Added), first.err)
	}
	must(sim.Run(w, 1, task.Create("/d/y", nil, task.Persistent)))
	second := must(sim.Run(w, 0, e.next()))
	must(sim.Run(w, 0, e.stop()))
	return first.err, paths(second.Added)
}

// stepParker is a park.Parker for one goroutine the test runs outside the
// world: at each Wait it sends the wait's number on at, then waits for on
// (the test's word that what the goroutine waits for is ready).
type stepParker struct {
	n  int
	at chan int
	on chan struct{}
}

func (p *stepParker) Wait(ready func() bool) {
	p.n++
	p.at <- p.n
	<-p.on
}

func (p *stepParker) Go(f func(park.Parker)) { go f(p) }

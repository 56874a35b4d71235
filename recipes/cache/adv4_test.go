package cache

import (
	"errors"
	"slices"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// Client.Next says: "Next blocks until the cache's snapshot differs from
// the one the previous Next returned and returns the difference". A Next
// whose ctx ends just as the change it waited for is handed to it (the
// context ends on the executor, in the OnEvent that sees /d/x added; the
// snapshot is handed to the waiting Next in the same job) returns the
// context's error, yet the cache counts the change as returned: the next
// Next starts from a snapshot the caller never saw, and /d/x is never
// reported Added to it.
//
// Go's select picks at random between the outcome and ctx.Done when both
// are ready, so one round loses the change one time in two: 40 rounds
// lose it in all but one run in 2^40.
func TestAdv4ClientNextCanceledAsChangeArrives(t *testing.T) {
	lost := 0
	for round := 0; round < 40 && lost == 0; round++ {
		func() {
			w := newWorld(t, 2)
			must(sim.Run(w, 1, task.Create("/d", nil, task.Persistent)))
			var cancelNext func()
			cl := must(NewChildrenClient(w.Execs[0], "/d", WithOnEvent(func(ev Event) {
				if ev.Type == Added && ev.Path == "/d/x" && cancelNext != nil {
					cancelNext() // the caller's ctx ends as the change arrives
				}
			})))
			var firstErr, secondErr error
			var second Change
			done := false
			w.Go(0, func(a *sim.Actor) {
				defer func() { done = true }()
				if err := cl.Start(a.Context()); err != nil {
					firstErr = err
					return
				}
				ctx, cancel := a.WithCancel(a.Context())
				cancelNext = cancel
				var first Change
				first, firstErr = cl.Next(ctx)
				cancel()
				if firstErr == nil {
					second = first // the outcome won the select: nothing lost this round
					return
				}
				if _, err := a.Exec().Create(a.Context(), "/d/y", nil, task.Persistent); err != nil {
					secondErr = err
					return
				}
				second, secondErr = cl.Next(a.Context())
			})
			// Let the actor start the cache and wait in Next, then add /d/x.
			w.Settle(func() bool { return cancelNext != nil })
			must(sim.Run(w, 1, task.Create("/d/x", nil, task.Persistent)))
			if !w.Settle(func() bool { return done }) {
				t.Fatal("actor did not end")
			}
			if firstErr != nil && !errors.Is(firstErr, task.ErrCanceled) {
				t.Fatalf("first Next: %v", firstErr)
			}
			if secondErr != nil {
				t.Fatalf("second Next: %v", secondErr)
			}
			if !slices.Contains(paths(second.Added), "/d/x") {
				lost++
				t.Errorf("round %d: Next canceled as /d/x arrived returned %v; the next Next added %v, changed %v: /d/x was never reported Added",
					round, firstErr, paths(second.Added), paths(second.Changed))
			}
			if e, _ := cl.started(); e != nil {
				must(sim.Run(w, 0, e.stop()))
			}
		}()
	}
}

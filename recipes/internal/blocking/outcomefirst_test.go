package blocking_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

// An outcome already in wins over a context that has ended too, in every
// wait of the package: a caller whose context ends inside the job that
// has just handed it its outcome (World.Interrupt, the job going on)
// finds both ready, and Go's select would pick one at random, so a
// seed of the simulation would not replay (barrier/blocking seed 426
// did not, GiveThenWait). Each case runs 64 times: a random pick passes
// all of them once in 2^64.
func TestOutcomeWinsOverEndedContext(t *testing.T) {
	type call func(ctx context.Context, w *sim.World, t task.Task[int]) (int, error)
	cases := []struct {
		name string
		call call
	}{
		{"GiveThenWait", func(ctx context.Context, w *sim.World, t task.Task[int]) (int, error) {
			return blocking.GiveThenWait(ctx, "", w.Execs[0], nil, t, task.Value(task.Unit{}))
		}},
		{"Give", func(ctx context.Context, w *sim.World, t task.Task[int]) (int, error) {
			return blocking.Give(ctx, "", w.Execs[0], nil, t)
		}},
		{"Take", func(ctx context.Context, w *sim.World, t task.Task[int]) (int, error) {
			return blocking.Take(ctx, "", w.Execs[0], t, nil, nil)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i := range 64 {
				got, err := outcomeAndEndTogether(t, c.call)
				if err != nil || got != 7 {
					t.Fatalf("run %d: returned %d, %v; want the outcome, 7, already in when the caller looked", i, got, err)
				}
			}
		})
	}
}

// outcomeAndEndTogether runs call in an actor on a task that hands over 7
// and, in the same job, ends the actor's context and gives it the turn.
func outcomeAndEndTogether(t *testing.T, call func(context.Context, *sim.World, task.Task[int]) (int, error)) (int, error) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var actor *sim.Actor
	var cancel context.CancelFunc
	tk := task.Task[int](func(s *task.Scope, k task.Cont[int]) {
		k(7, nil)                  // the outcome is handed over...
		w.Interrupt(actor, cancel) // ...and the caller's context ends, in this job
	})
	var got int
	var gotErr error
	done := false
	actor = w.Go(0, func(a *sim.Actor) {
		var ctx context.Context
		ctx, cancel = a.WithCancel(a.Context())
		defer cancel()
		got, gotErr = call(ctx, w, tk)
		done = true
	})
	w.Drive()
	if !done {
		return 0, fmt.Errorf("the call did not return")
	}
	if gotErr != nil && !errors.Is(gotErr, task.ErrCanceled) {
		t.Fatalf("unexpected error %v", gotErr)
	}
	return got, gotErr
}

package combinators_test

import (
	"errors"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/memcheck"
	"github.com/zkflow/zkflow/task"
)

// A long-lived session's memory is flat however many flows it runs:
// memcheck.Cycles flows of each shape on one session (a fakezk world,
// whose clock fires timers without sleeping) leave the live scope count
// under the session scope where it was after the warm-up and the live
// heap within memcheck.Bound of it. The shapes: a Fork (its forked read
// ends after the forking flow); a Deadline met (its timer must go when
// the flow ends) and one missed (the sleep inside is abandoned); a Retry
// that fails twice, with a backoff, before it succeeds; an All of two
// reads.
func TestMemoryFlatFlows(t *testing.T) {
	errAgain := errors.New("again")
	read := task.Get("/mem")
	for _, tc := range []struct {
		name string
		flow func(w *sim.World) task.Task[task.Unit]
		want error
	}{
		{"fork", func(w *sim.World) task.Task[task.Unit] {
			done := false
			return c.Seq(c.Fork(read, func(_ task.Data, err error) { done = err == nil }),
				task.Func(func(*task.Scope) (task.Unit, error) {
					if done {
						return task.Unit{}, errors.New("the forked flow ended before the forking one went on")
					}
					return task.Unit{}, nil
				}))
		}, nil},
		{"deadline/met", func(w *sim.World) task.Task[task.Unit] {
			return c.Map(c.Timeout(read, time.Second), func(task.Data) task.Unit { return task.Unit{} })
		}, nil},
		{"deadline/missed", func(w *sim.World) task.Task[task.Unit] {
			return c.Timeout(c.Seq(c.Sleep(2*time.Second), task.Done), time.Second)
		}, task.ErrDeadlineExceeded},
		{"retry", func(w *sim.World) task.Task[task.Unit] {
			n := 0
			flaky := c.Then(read, func(task.Data) task.Task[task.Unit] {
				if n++; n < 3 {
					return task.Fail[task.Unit](errAgain)
				}
				return task.Done
			})
			return c.Retry(flaky, c.Policy{On: []error{errAgain}, Backoff: c.Backoff{Initial: time.Millisecond, Multiplier: 2, Jitter: 0.5}})
		}, nil},
		{"all", func(w *sim.World) task.Task[task.Unit] {
			return c.Map(c.All(read, read), func([]task.Data) task.Unit { return task.Unit{} })
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if _, err := sim.Run(w, 0, task.Create("/mem", nil, task.Persistent)); err != nil {
				t.Fatal(err)
			}
			memcheck.Check(t, w.Execs[0].SessionScope().Descendants, func(int) {
				if _, err := sim.Run(w, 0, tc.flow(w)); !errors.Is(err, tc.want) {
					t.Fatalf("flow: %v, want %v", err, tc.want)
				}
				w.Drive() // a forked flow ends too
			})
			for _, err := range w.Errs {
				t.Errorf("detached flow failed: %v", err)
			}
		})
	}
}

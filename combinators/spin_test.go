package combinators_test

import (
	"errors"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// spinCounter counts the attempts (iterations) of a looping flow and, at
// attempt closeAt, closes the executor from inside the job. At attempt
// limit it ends the flow with errSpun, so that a test of a loop that never
// yields ends (failed) instead of hanging.
type spinCounter struct {
	ex        *executor.Executor
	n         int
	closeAt   int
	closeStep uint64 // the job Close was called in
	afterJob  int    // attempts in jobs after closeStep's
}

const spinLimit = 100_000

var errSpun = errors.New("test: the loop reached its attempt limit")

func counted[T any](sc *spinCounter, t task.Task[T]) task.Task[T] {
	return func(s *task.Scope, k task.Cont[T]) {
		sc.n++
		if sc.closeStep != 0 && sc.ex.Steps() != sc.closeStep {
			sc.afterJob++
		}
		if sc.n == sc.closeAt {
			sc.closeStep = sc.ex.Steps()
			sc.ex.Close() // from a job: refuses work, stops before the next job
		}
		if sc.n >= spinLimit {
			var zero T
			k(zero, errSpun)
			return
		}
		t(s, k)
	}
}

// A Retry whose attempts fail synchronously with an error its policy
// retries, with no backoff and no attempt limit (a Deadline already past,
// retried on task.ErrDeadlineExceeded: its scope is not the Retry's, so the
// Retry's own scope never ends), and a Loop whose body completes
// synchronously and whose condition always holds, loop forever; that is
// theirs to do. But they must not hold the executor: executor/doc.go's
// "jobs run one at a time, to completion" and RUNTIME.md's stopping bound
// ("a flow looping on synchronous steps does not hold Run") need each job
// to end. So a read submitted beside the loop completes while the loop
// goes on, and Close, called from one of the loop's attempts, ends the
// loop with task.ErrClosed with no attempt in a later job. (Before the
// loop yielded, its first job ran until the counter's limit: the read
// completed only after it, and the loop ended with errSpun.)
func TestSyncLoopsYield(t *testing.T) {
	errAgain := errors.New("again")
	for _, tc := range []struct {
		name string
		flow func(w *sim.World, sc *spinCounter) task.Task[int]
	}{
		{"retry/deadline-passed", func(w *sim.World, sc *spinCounter) task.Task[int] {
			past := w.Clock.Now()
			read := c.Map(task.Exists("/"), func(*task.Stat) int { return 1 })
			return c.Retry(counted(sc, c.Deadline(read, past)), c.Policy{On: []error{task.ErrDeadlineExceeded}})
		}},
		{"retry/sync-failure", func(w *sim.World, sc *spinCounter) task.Task[int] {
			return c.Retry(counted(sc, task.Fail[int](errAgain)), c.Policy{On: []error{errAgain}})
		}},
		{"loop/sync-body", func(w *sim.World, sc *spinCounter) task.Task[int] {
			return c.Loop(0, func(int) bool { return true }, func(i int) task.Task[int] {
				return counted(sc, task.Value(i+1))
			})
		}},
	} {
		for _, mode := range []string{"beside", "close"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				ex := w.Execs[0]
				sc := &spinCounter{ex: ex}
				if mode == "close" {
					sc.closeAt = 10
				}
				loop := sim.Submit(w, 0, tc.flow(w, sc))
				step := func() {
					ex.Step()
					w.Server.RunUntilIdle()
				}
				if mode == "beside" {
					read := sim.Submit(w, 0, task.Exists("/"))
					for i := 0; i < spinLimit && !read.Done; i++ {
						step()
					}
					if !read.Done || read.Err != nil {
						t.Fatalf("the read beside the loop: done %v, err %v", read.Done, read.Err)
					}
					if sc.n >= spinLimit || loop.Done {
						t.Fatalf("the read beside the loop completed only after the loop ended (%d attempts, err %v): the loop held the executor", sc.n, loop.Err)
					}
					sc.closeAt = sc.n + 10
				}
				for i := 0; i < spinLimit && !loop.Done; i++ {
					step()
				}
				if !loop.Done {
					t.Fatalf("the loop has not ended %d steps after Close", spinLimit)
				}
				if !errors.Is(loop.Err, task.ErrClosed) {
					t.Errorf("the loop ended with %v after %d attempts, want task.ErrClosed (Close at attempt %d)", loop.Err, sc.n, sc.closeAt)
				}
				if sc.afterJob != 0 {
					t.Errorf("the loop ran %d attempts in jobs after Close's", sc.afterJob)
				}
			})
		}
	}
}

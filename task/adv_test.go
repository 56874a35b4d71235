package task_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

// executor.Run's doc: "Run honours Close and the end of ctx within a
// bound, whatever the queues hold": each of the shutdown's three phases
// runs at most 1,024 jobs beyond eight per job queued when it starts,
// then drops what flows still schedule and reports it. A body that goes on awaiting after its Await returned
// ErrClosed (a retry loop that does not know the error) would otherwise
// keep the shutdown going for ever: Shutdown and Close must return, the
// loop must stop within the bound, and OnError must say why. The body
// stops by itself after safetyLoops, far beyond the bound, so that a
// broken shutdown fails the test instead of hanging it.
const safetyLoops = 1 << 24

// loopBound: the most continuations a shutdown lets a looping flow run:
// three phases of 1,024 jobs (and the few queued at the stop), each job
// the continuation it resumes and 64 more (a trampoline's depth).
const loopBound = 3 * (1024 + 8*4) * 65

func reportedCut(r *rig.Rig) bool {
	for _, err := range r.Errs {
		if strings.Contains(err.Error(), "kept scheduling steps after Close") {
			return true
		}
	}
	return false
}

func TestAdvFlowLoopingPastClose(t *testing.T) {
	for _, how := range []string{"Shutdown", "Run and Close"} {
		t.Run(how, func(t *testing.T) {
			r := rig.New(t)
			var awaits, closedSeen atomic.Int64
			started := make(chan struct{})
			rig.Submit(r, task.Flow(func(f *task.F) (int, error) {
				for closedSeen.Load() < safetyLoops {
					_, err := task.Await(f, task.Value(1))
					if awaits.Add(1) == 200 {
						close(started)
					}
					if errors.Is(err, task.ErrClosed) {
						closedSeen.Add(1)
					}
				}
				return int(awaits.Load()), nil
			}))
			if how == "Shutdown" {
				for awaits.Load() < 200 {
					r.Ex.Step()
				}
				r.Ex.Shutdown()
			} else {
				done := make(chan struct{})
				go func() { defer close(done); _ = r.Ex.Run(context.Background()) }()
				<-started
				r.Ex.Close() // waits until Run has stopped the executor
				<-done
			}
			if n := closedSeen.Load(); n > loopBound {
				t.Fatalf("the body took %d awaits that returned ErrClosed, want at most %d", n, loopBound)
			}
			if !reportedCut(r) {
				t.Fatalf("the shutdown did not report the flow it cut off: %v", r.Errs)
			}
		})
	}
}

// The same with a plain chain, no Flow: a continuation that runs its
// step again whatever the error (each Run in the ended scope delivers
// ErrClosed at once).
func TestAdvChainLoopingPastClose(t *testing.T) {
	r := rig.New(t)
	n, closed := 0, 0
	rig.Submit(r, task.Task[int](func(s *task.Scope, k task.Cont[int]) {
		var step func()
		step = func() {
			task.Run(s, task.Value(1), func(_ int, err error) {
				n++
				if errors.Is(err, task.ErrClosed) {
					closed++
				}
				if closed < safetyLoops {
					step()
					return
				}
				k(n, nil)
			})
		}
		step()
	}))
	for n < 200 {
		r.Ex.Step()
	}
	r.Ex.Shutdown()
	if closed > loopBound {
		t.Fatalf("the chain ran %d continuations with ErrClosed during Shutdown, want at most %d", closed, loopBound)
	}
	if !reportedCut(r) {
		t.Fatalf("the shutdown did not report the chain it cut off: %v", r.Errs)
	}
}

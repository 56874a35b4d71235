package task_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

// executor.Run's doc: "Run honours Close and the end of ctx within a
// bound, whatever the queues hold ... A flow that keeps the queues busy
// (a loop of reads, a chain of synchronous steps) takes no step after
// the stop." A body that goes on awaiting synchronous tasks after its
// Await returned ErrClosed (a retry loop that does not know the error)
// must not keep the shutdown going: at most the awaits of one resume.
// The body gives up by itself after 10,000 awaits that returned
// ErrClosed, so that a broken shutdown ends and the test reports it
// (without that, Shutdown and Close never return).
func TestAdvFlowLoopingPastClose(t *testing.T) {
	for _, how := range []string{"Shutdown", "Run and Close"} {
		t.Run(how, func(t *testing.T) {
			r := rig.New(t)
			var awaits, closedSeen atomic.Int64
			started := make(chan struct{})
			o := rig.Submit(r, task.Flow(func(f *task.F) (int, error) {
				for closedSeen.Load() < 10_000 {
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
			if n := closedSeen.Load(); n > 64 {
				t.Fatalf("the body took %d awaits that returned ErrClosed, want none beyond one resume (64)", n)
			}
			if how == "Shutdown" {
				o.Want(t, 1, task.ErrClosed)
			}
		})
	}
}

// The same with a plain chain, no Flow: a continuation that runs its
// step again whatever the error (each Run in the ended scope delivers
// ErrClosed at once) keeps Shutdown going until the chain gives up by
// itself (here after 10,000 ErrClosed), where Run's doc promises a
// bound whatever the queues hold.
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
				if closed < 10_000 {
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
	if closed > 64 {
		t.Fatalf("the chain ran %d continuations with ErrClosed during Shutdown, want none beyond one trampoline (64)", closed)
	}
}

// Await's doc: "Await from anywhere else (another goroutine, after the
// body returned, with the handle of an outer flow) returns
// ErrAwaitOutsideBody." From another goroutine while the body runs (here
// it waits for that goroutine: a body busy with other work is the same
// case) the Await is accepted and runs the task. FLOWS.md calls this
// case undefined; the two docs disagree.
func TestAdvAwaitFromAnotherGoroutine(t *testing.T) {
	r := rig.New(t)
	var got error
	rig.Submit(r, task.Flow(func(f *task.F) (int, error) {
		done := make(chan struct{})
		go func() { //flowcheck:allow the test checks that an Await from another goroutine is refused
			defer close(done)
			_, got = task.Await(f, task.Value(1))
		}()
		<-done //flowcheck:allow the goroutine's Await is what is under test
		return 0, nil
	}))
	r.Idle()
	if !errors.Is(got, task.ErrAwaitOutsideBody) {
		t.Fatalf("Await from another goroutine while the body runs = %v, want ErrAwaitOutsideBody", got)
	}
}

package task_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

// FLOWS.md "How it runs": "a body whose deadline passed while suspended
// runs on to its return without waiting for a reconnect"; table: "a
// deadline (also while suspended) ... reach the Await".
//
// The body's 65th synchronous Await is bounced through the task queue
// while the session is connected; the session is then suspended (the
// event runs before the queued resume) and the deadline passes.
func TestBouncedBodyReachedByADeadlineWhileSuspended(t *testing.T) {
	r := rig.New(t)
	awaits := 0
	returned := false
	var last error
	body := task.Flow(func(f *task.F) (int, error) {
		for {
			_, err := task.Await(f, task.Value(1))
			awaits++
			if err != nil {
				last = err
				returned = true
				return 0, err
			}
		}
	})
	o := &rig.Outcome[int]{}
	executor.SubmitWith(r.Ex, body, executor.Options{Deadline: r.Clock.Now().Add(time.Second)}, o.K)
	for awaits == 0 {
		r.Ex.Step()
	}
	// the body has bounced its next resume through the task queue
	if task.LiveBodies(r.Ex) != 1 {
		t.Fatalf("bodies alive %d", task.LiveBodies(r.Ex))
	}
	r.Conn.Suspend()
	r.Idle() // runs the Suspended event; the task queue is paused
	r.Advance(2 * time.Second)
	r.Advance(0)
	r.Advance(time.Second)
	o.Want(t, 1, task.ErrDeadlineExceeded)
	if !returned {
		t.Fatalf("deadline passed while suspended: flow delivered %v, but the body has not run on to its return (after %d awaits; %d bodies alive)", o.Err, awaits, task.LiveBodies(r.Ex))
	}
	if !errors.Is(last, task.ErrDeadlineExceeded) {
		t.Fatalf("last %v", last)
	}
}

// Same with Flow.Cancel while suspended, and showing the body runs on
// only at the reconnect.
func TestBouncedBodyReachedByACancelWhileSuspended(t *testing.T) {
	r := rig.New(t)
	awaits := 0
	returned := false
	body := task.Flow(func(f *task.F) (int, error) {
		for {
			_, err := task.Await(f, task.Value(1))
			awaits++
			if err != nil {
				returned = true
				return 0, err
			}
		}
	})
	o := &rig.Outcome[int]{}
	fl := executor.Submit(r.Ex, body, o.K)
	for awaits == 0 {
		r.Ex.Step()
	}
	r.Conn.Suspend()
	r.Idle()
	fl.Cancel()
	r.Idle()
	r.Advance(time.Second)
	o.Want(t, 1, task.ErrCanceled)
	atSuspend := returned
	r.Conn.Connect(1)
	r.Idle()
	if !atSuspend {
		t.Fatalf("canceled while suspended: body returned only after the reconnect (returned now: %v)", returned)
	}
}

// executor.Abandon: "(their deferred functions run; no continuation is
// called, no step runs, nothing is sent)"; FLOWS.md "Ending without
// returning": "Its deferred functions run; an Await they make returns
// ErrUnwound; no continuation is called and nothing is sent."
//
// A body's deferred cleanup starts a release with task.Run (a body is a
// step; steps start tasks with Run) instead of awaiting it.
func TestAbandonSendsNothingADeferredFunctionStarts(t *testing.T) {
	r := rig.New(t)
	called := false
	rig.Submit(r, task.Flow(func(f *task.F) (int, error) {
		defer task.Run(f.Scope(), task.Delete("/lock", -1), func(task.Unit, error) { called = true })
		task.Await(f, task.Get("/a"))
		return 0, nil
	}))
	r.Idle()
	before := len(r.Conn.Calls())
	r.Ex.Abandon()
	if n := len(r.Conn.Calls()); n != before {
		t.Fatalf("Abandon: %d request(s) reached the connection from a deferred function of an unwound body (%v)", n-before, r.Conn.Calls()[before].Req)
	}
	if called {
		t.Fatal("Abandon: the continuation of a deferred function's request was called")
	}
}

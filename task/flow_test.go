package task_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
	"go.uber.org/goleak"
)

var okGet = task.Response{Data: []byte("x")}

// onExecutor reports whether the caller runs as a job of an executor (or
// in a flow body, which runs in lockstep with one).
func onExecutor() bool { return errors.Is(executor.CanBlock(), executor.ErrOnExecutor) }

// A body reads as straight lines: each Await returns the awaited task's
// outcome, the body's return is the task's outcome, and the continuation
// runs once, on the executor goroutine.
func TestFlowStraightLine(t *testing.T) {
	r := rig.New(t)
	var seen []string
	flow := task.Flow(func(f *task.F) (string, error) {
		d, err := task.Await(f, task.Get("/a"))
		if err != nil {
			return "", err
		}
		seen = append(seen, string(d.Data))
		_, err = task.Await(f, task.Get("/missing"))
		seen = append(seen, err.Error())
		return "done " + string(d.Data), nil
	})
	var calls int
	var onEx bool
	var got string
	executor.Submit(r.Ex, flow, func(v string, err error) {
		calls++
		onEx = onExecutor()
		got = v
		if err != nil {
			t.Errorf("flow: %v", err)
		}
	})
	r.Idle()
	if n := len(r.Conn.Pending()); n != 1 {
		t.Fatalf("%d requests pending after the first Await, want 1", n)
	}
	r.Conn.Pending()[0].Reply(okGet)
	r.Idle()
	if len(seen) != 1 || seen[0] != "x" {
		t.Fatalf("after the first reply the body saw %q", seen)
	}
	r.Conn.Pending()[0].Fail(task.ErrNoNode)
	r.Idle()
	if calls != 1 || got != "done x" || !onEx {
		t.Fatalf("continuation: %d calls, value %q, on the executor %v", calls, got, onEx)
	}
	if len(seen) != 2 || seen[1] != "zk get /missing: node does not exist" {
		t.Fatalf("second Await: %q", seen)
	}
	if n := task.LiveBodies(r.Ex); n != 0 {
		t.Fatalf("%d bodies alive after the flow ended", n)
	}
}

// A flow is a Task both ways: it awaits combinators (Retry, All,
// Timeout), and combinators take it (Retry runs the body afresh, All
// runs two at once, Fork starts one on its own, Timeout bounds one: the
// Await it waits in returns the deadline).
func TestFlowComposes(t *testing.T) {
	r := rig.New(t)
	runs := 0
	var innerErr error
	// flaky fails its first run with connection loss.
	flaky := task.Flow(func(f *task.F) (int, error) {
		runs++
		if runs == 1 {
			return 0, task.ErrConnectionLoss
		}
		return runs, nil
	})
	outer := task.Flow(func(f *task.F) ([]int, error) {
		n, err := task.Await(f, c.Retry(flaky, c.Policy{}))
		if err != nil {
			return nil, err
		}
		both, err := task.Await(f, c.All(task.Value(n), flaky))
		if err != nil {
			return nil, err
		}
		_, err = task.Await(f, c.Timeout(task.Get("/never"), time.Second))
		if !errors.Is(err, task.ErrDeadlineExceeded) {
			return nil, err
		}
		_, err = task.Await(f, c.Timeout(task.Flow(func(f *task.F) (task.Data, error) {
			d, err := task.Await(f, task.Get("/never"))
			innerErr = err
			return d, err
		}), time.Second))
		if !errors.Is(err, task.ErrDeadlineExceeded) {
			return nil, err
		}
		return both, nil
	})
	var forked []int
	o := rig.Submit(r, c.Then(c.Retry(outer, c.Policy{}), func(v []int) task.Task[[]int] {
		return c.Map(c.Fork(task.Flow(func(f *task.F) (int, error) {
			v, err := task.Await(f, task.Value(7))
			forked = append(forked, v)
			return v, err
		}), nil), func(task.Unit) []int { return v })
	}))
	r.Idle()
	r.Advance(2 * time.Second)
	r.Advance(2 * time.Second)
	o.Want(t, 1, nil)
	if !errors.Is(innerErr, task.ErrDeadlineExceeded) {
		t.Fatalf("the Await of a flow under Timeout returned %v", innerErr)
	}
	if len(o.V) != 2 || o.V[0] != 2 || o.V[1] != 3 || runs != 3 {
		t.Fatalf("outcome %v after %d runs of flaky, want [2 3] after 3", o.V, runs)
	}
	if len(forked) != 1 || forked[0] != 7 {
		t.Fatalf("forked flow saw %v", forked)
	}
}

// Connection loss pauses a body at its Await as it pauses any step: a
// reply that arrives while the session is suspended resumes the body only
// after the reconnect. A Retry after connection loss sends again only
// after the reconnect.
func TestFlowPausesAtAwait(t *testing.T) {
	r := rig.New(t)
	var steps []string
	o := rig.Submit(r, task.Flow(func(f *task.F) (task.Unit, error) {
		_, err := task.Await(f, task.Get("/a"))
		steps = append(steps, "get")
		if err != nil {
			return task.Unit{}, err
		}
		_, err = task.Await(f, c.Retry(task.Get("/b"), c.Policy{}))
		steps = append(steps, "retried get")
		return task.Unit{}, err
	}))
	r.Idle()
	r.Conn.Suspend()
	r.Idle()
	r.Conn.Pending()[0].Reply(okGet)
	r.Idle()
	if len(steps) != 0 {
		t.Fatalf("the body ran %v while the session was suspended", steps)
	}
	r.Conn.Connect(1)
	r.Idle()
	if len(steps) != 1 {
		t.Fatalf("after the reconnect the body ran %v, want [get]", steps)
	}
	r.Conn.Suspend()
	r.Idle()
	r.Conn.Pending()[0].Fail(task.ErrConnectionLoss)
	r.Idle()
	if n := len(r.Conn.Calls()); n != 2 {
		t.Fatalf("%d requests sent while suspended, want 2 (no retry before the reconnect)", n)
	}
	r.Conn.Connect(1)
	r.Idle()
	if n := len(r.Conn.Calls()); n != 3 {
		t.Fatalf("%d requests after the reconnect, want 3 (the retry)", n)
	}
	r.Conn.Pending()[0].Reply(okGet)
	r.Idle()
	o.Want(t, 1, nil)
	if len(steps) != 2 {
		t.Fatalf("steps %v", steps)
	}
}

// A deadline or a cancel reaches the Await the body is suspended in,
// even while the session is suspended, and even when the awaited task
// keeps no wait in the scope: Await returns the error, the body goes on
// to its return, which ends the flow; the late outcome is dropped.
func TestFlowEndsAtAwaitOfAnyTask(t *testing.T) {
	r := rig.New(t)
	var late task.Cont[int]
	parked := task.Task[int](func(_ *task.Scope, k task.Cont[int]) { late = k })
	var awaited error
	resumed := 0
	o := &rig.Outcome[int]{}
	executor.SubmitWith(r.Ex, task.Flow(func(f *task.F) (int, error) {
		_, awaited = task.Await(f, parked)
		resumed++
		return 0, awaited
	}), executor.Options{Deadline: r.Clock.Now().Add(time.Second)}, o.K)
	r.Idle()
	r.Advance(2 * time.Second)
	if !errors.Is(awaited, task.ErrDeadlineExceeded) || resumed != 1 {
		t.Fatalf("the Await returned %v (%d resumes), want the deadline once", awaited, resumed)
	}
	o.Want(t, 1, task.ErrDeadlineExceeded)
	late(5, nil)
	r.Idle()
	if resumed != 1 || task.LiveBodies(r.Ex) != 0 {
		t.Fatalf("the late outcome resumed the body (%d resumes, %d bodies alive)", resumed, task.LiveBodies(r.Ex))
	}
	o.Want(t, 1, task.ErrDeadlineExceeded)
}

func TestFlowEndsAtAwait(t *testing.T) {
	for _, how := range []string{"deadline", "deadline while suspended", "cancel", "expiry"} {
		t.Run(how, func(t *testing.T) {
			r := rig.New(t)
			var awaited []error
			after := 0
			body := task.Flow(func(f *task.F) (int, error) {
				_, err := task.Await(f, task.Get("/a"))
				awaited = append(awaited, err)
				if err != nil {
					// A scope that has ended starts nothing more.
					_, err2 := task.Await(f, task.Get("/b"))
					awaited = append(awaited, err2)
					return 0, err
				}
				after++
				return 1, nil
			})
			o := &rig.Outcome[int]{}
			var want error
			switch how {
			case "deadline", "deadline while suspended":
				executor.SubmitWith(r.Ex, body, executor.Options{Deadline: r.Clock.Now().Add(time.Second)}, o.K)
				r.Idle()
				if how == "deadline while suspended" {
					r.Conn.Suspend()
					r.Idle()
				}
				r.Advance(2 * time.Second)
				want = task.ErrDeadlineExceeded
			case "cancel":
				fl := executor.Submit(r.Ex, body, o.K)
				r.Idle()
				fl.Cancel()
				r.Idle()
				want = task.ErrCanceled
			case "expiry":
				executor.Submit(r.Ex, body, o.K)
				r.Idle()
				r.Conn.Expire()
				r.Idle()
				want = task.ErrSessionExpired
			}
			if len(awaited) != 2 || !errors.Is(awaited[0], want) || !errors.Is(awaited[1], want) {
				t.Fatalf("the Awaits returned %v, want %v twice", awaited, want)
			}
			o.Want(t, 1, want)
			if n := len(r.Conn.Calls()); n != 1 {
				t.Fatalf("%d requests sent, want 1 (nothing starts in an ended scope)", n)
			}
			r.Conn.Connect(1)
			r.Idle()
			r.Conn.Pending()[0].Reply(okGet)
			r.Idle()
			o.Want(t, 1, want)
			if after != 0 || len(awaited) != 2 {
				t.Fatalf("the late reply resumed the body")
			}
		})
	}
}

// A body suspended when its executor stops gets ErrClosed at its Await
// and ends; one suspended when its executor is abandoned is unwound: its
// deferred functions run, an Await they make returns ErrUnwound, no
// continuation runs. Either way no goroutine is left.
func TestFlowUnwound(t *testing.T) {
	t.Run("shutdown", func(t *testing.T) {
		r := rig.New(t)
		var got error
		o := rig.Submit(r, task.Flow(func(f *task.F) (int, error) {
			_, err := task.Await(f, task.Get("/a"))
			got = err
			return 0, err
		}))
		r.Idle()
		r.Ex.Shutdown()
		if !errors.Is(got, task.ErrClosed) {
			t.Fatalf("Await returned %v at the shutdown, want ErrClosed", got)
		}
		o.Want(t, 1, task.ErrClosed)
		goleak.VerifyNone(t)
	})
	t.Run("scope closed", func(t *testing.T) {
		r := rig.New(t)
		var got error
		// A flow inside All, whose sibling fails: All closes the scope
		// the flow is suspended in.
		o := rig.Submit(r, c.All(task.Flow(func(f *task.F) (int, error) {
			_, err := task.Await(f, task.Get("/a"))
			got = err
			return 0, err
		}), task.Fail[int](task.ErrNoNode)))
		r.Idle()
		o.Want(t, 1, task.ErrNoNode)
		if got == nil || task.LiveBodies(r.Ex) != 0 {
			t.Fatalf("the body's Await returned %v; %d bodies alive", got, task.LiveBodies(r.Ex))
		}
		goleak.VerifyNone(t)
	})
	t.Run("abandoned", func(t *testing.T) {
		r := rig.New(t)
		var deferred error
		o := rig.Submit(r, task.Flow(func(f *task.F) (int, error) {
			defer func() { _, deferred = task.Await(f, task.Value(1)) }()
			task.Await(f, task.Get("/a"))
			t.Error("the abandoned body was resumed")
			return 0, nil
		}))
		r.Idle()
		if task.LiveBodies(r.Ex) != 1 {
			t.Fatalf("%d bodies alive, want 1", task.LiveBodies(r.Ex))
		}
		r.Ex.Abandon()
		if !errors.Is(deferred, task.ErrUnwound) {
			t.Fatalf("Await in a deferred function of an unwound body = %v", deferred)
		}
		o.Want(t, 0, nil)
		goleak.VerifyNone(t)
	})
	t.Run("abandoned with a resume queued", func(t *testing.T) {
		r := rig.New(t)
		awaits := 0
		o := rig.Submit(r, task.Flow(func(f *task.F) (int, error) {
			for range 1000 {
				task.Await(f, task.Value(1))
				awaits++
			}
			return awaits, nil
		}))
		for awaits == 0 {
			r.Ex.Step()
		}
		// After maxDepth synchronous awaits, the next resume waits on the
		// task queue: the body is alive, suspended, with no wait.
		if n := task.LiveBodies(r.Ex); n != 1 || awaits >= 1000 {
			t.Fatalf("%d bodies alive after %d awaits", n, awaits)
		}
		r.Ex.Abandon()
		o.Want(t, 0, nil)
		at := awaits
		// A Shutdown after all (not what Abandon is for) runs what the
		// task queue holds, the body's resume: the body stays unwound,
		// and the submitted flow ends with ErrClosed as every flow does.
		r.Ex.Shutdown()
		if awaits != at {
			t.Fatalf("the unwound body ran on: %d awaits, then %d", at, awaits)
		}
		o.Want(t, 1, task.ErrClosed)
		goleak.VerifyNone(t)
	})
}

// A panic in a body is a panic, as in a step: it reaches the goroutine
// driving the executor with its value, and leaves no goroutine.
func TestFlowPanics(t *testing.T) {
	catch := func(tk task.Task[int]) (p any) {
		r := rig.New(t)
		executor.Submit(r.Ex, tk, nil)
		defer func() { p = recover() }()
		r.Idle()
		return nil
	}
	step := catch(task.Func(func(*task.Scope) (int, error) { panic("bug") }))
	body := catch(task.Flow(func(f *task.F) (int, error) {
		task.Await(f, task.Value(1))
		panic("bug")
	}))
	if step != "bug" || body != step {
		t.Fatalf("a step's panic reached the driver as %v, a body's as %v", step, body)
	}
	goleak.VerifyNone(t)
}

// A million synchronous awaits in a loop do not grow the stack: the
// executor's stack is as deep at the last as at the tenth (a million
// without the race detector, which slows each await twentyfold).
func TestFlowMillionAwaits(t *testing.T) {
	n := 1_000_000
	if raceBuild || testing.Short() {
		n = 50_000
	}
	r := rig.New(t)
	depth := func() int {
		var pcs [1024]uintptr
		return runtime.Callers(0, pcs[:])
	}
	var at10, atEnd int
	o := rig.Submit(r, task.Flow(func(f *task.F) (int, error) {
		sum := 0
		for i := range n {
			v, err := task.Await(f, task.Func(func(*task.Scope) (int, error) {
				switch i {
				case 10:
					at10 = depth()
				case n - 1:
					atEnd = depth()
				}
				return 1, nil
			}))
			if err != nil {
				return sum, err
			}
			sum += v
		}
		return sum, nil
	}))
	r.Idle()
	o.Want(t, 1, nil)
	if o.V != n || at10 == 0 || atEnd > at10+8 {
		t.Fatalf("sum %d; stack depth %d at the 10th await, %d at the last", o.V, at10, atEnd)
	}
}

// Blocking calls refuse a body, as they refuse a step: executor.Await
// there would wait for the executor the body stalls.
func TestFlowBodyCannotBlock(t *testing.T) {
	r := rig.New(t)
	var canBlock, awaited error
	o := rig.Submit(r, task.Flow(func(f *task.F) (int, error) {
		task.Await(f, task.Value(1)) // and after a resume too
		canBlock = executor.CanBlock()
		_, awaited = executor.Await(context.Background(), r.Ex, task.Value(1)) //flowcheck:allow the test checks that the call is refused
		return 0, nil
	}))
	r.Idle()
	o.Want(t, 1, nil)
	if !errors.Is(canBlock, executor.ErrOnExecutor) || !errors.Is(awaited, executor.ErrOnExecutor) {
		t.Fatalf("in a body: CanBlock = %v, Await = %v; want ErrOnExecutor", canBlock, awaited)
	}
	if task.InFlowBody() {
		t.Fatal("InFlowBody on the test goroutine")
	}
}

// Bad input gets a typed error at once: a nil body, an Await with a nil
// handle, with a handle after its body returned, or with the handle of
// an outer body.
func TestFlowMisuse(t *testing.T) {
	r := rig.New(t)
	o := rig.Submit(r, task.Flow[int](nil))
	r.Idle()
	o.Want(t, 1, task.ErrNilFlowBody)
	if !errors.Is(task.ErrNilFlowBody, task.ErrInvalidArgument) {
		t.Fatal("ErrNilFlowBody is not an ErrInvalidArgument")
	}
	if _, err := task.Await(nil, task.Value(1)); !errors.Is(err, task.ErrAwaitOutsideBody) {
		t.Fatalf("Await(nil) = %v", err)
	}
	var kept *task.F
	var inner error
	o2 := rig.Submit(r, task.Flow(func(f *task.F) (int, error) {
		kept = f //flowcheck:allow the test checks that a kept F is refused after its body
		return task.Await(f, task.Flow(func(*task.F) (int, error) {
			_, inner = task.Await(f, task.Value(1)) //flowcheck:allow the test checks that an outer body's F is refused
			return 2, nil
		}))
	}))
	r.Idle()
	o2.Want(t, 1, nil)
	if !errors.Is(inner, task.ErrAwaitOutsideBody) {
		t.Fatalf("Await with an outer body's handle = %v", inner)
	}
	if _, err := task.Await(kept, task.Value(1)); !errors.Is(err, task.ErrAwaitOutsideBody) {
		t.Fatalf("Await after the body returned = %v", err)
	}
}

// A body runs only while its executor runs it, never beside another
// step: it shares a plain counter with plain steps, with no lock, under
// an executor run by Run on its own goroutine while the test goroutine
// submits (the race detector checks it, in make test).
func TestFlowNeedsNoLocks(t *testing.T) {
	r := rig.New(t)
	r.Conn.Auto = func(task.Request) task.Response { return okGet }
	shared := 0
	bump := task.Func(func(*task.Scope) (int, error) { shared++; return shared, nil })
	flow := task.Flow(func(f *task.F) (int, error) {
		for range 20 {
			if _, err := task.Await(f, task.Get("/a")); err != nil {
				return 0, err
			}
			shared++
			if _, err := task.Await(f, bump); err != nil {
				return 0, err
			}
		}
		return shared, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Ex.Run(ctx) }()
	outs := make(chan error, 20)
	for i := range 20 {
		var tk task.Task[int] = flow
		if i%2 == 0 {
			tk = c.Seq(task.Get("/a"), bump)
		}
		executor.Submit(r.Ex, tk, func(_ int, err error) { outs <- err })
	}
	for range 20 {
		if err := <-outs; err != nil {
			t.Error(err)
		}
	}
	cancel()
	<-done
	if want := 10 + 10*20*2; shared != want {
		t.Fatalf("shared = %d, want %d", shared, want)
	}
}

package task_test

// Promises an adversarial review found broken: each test quotes the
// promise it checks, and fails on the code before its fix.

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

// inFlowScope runs fn once, on the executor goroutine, in the scope of a
// submitted flow, and runs the executor until idle.
func inFlowScope(r *rig.Rig, fn func(s *task.Scope)) {
	executor.Submit(r.Ex, task.Func(func(s *task.Scope) (task.Unit, error) {
		fn(s)
		return task.Unit{}, nil
	}), nil)
	r.Idle()
}

// parked is a task that waits in its scope until the scope ends.
var parked = task.Task[int](func(s *task.Scope, k task.Cont[int]) {
	task.Suspend(s, k, func(task.Cont[int]) func() { return nil })
})

// FLOWS.md, How it runs: "When the scope ends first (deadline, cancel,
// expiry, Close), ... the Await returns the scope's error at once, the
// body runs on to its return ... Every later Await in that scope returns
// the error at once." and WithDeadline: "a deadline ends a flow even
// while the session is suspended".
//
// A flow with a deadline awaits a Get; the session is suspended (the task
// queue paused); the deadline passes. The body then makes 100 more
// Awaits, each of which returns ErrDeadlineExceeded at once. After 64 in
// a row the driver bounces the next resume so that other jobs run; the
// bounce went through the task queue alone, paused while suspended, and
// the body stalled at its 65th Await until a reconnect. It now goes
// through the event queue too, as a timer due now: the mock clock fires
// such a timer at its next step, here of zero length (no time passes, no
// reconnect).
func TestAwaitsReturnAtOnceAfterDeadlineWhileSuspended(t *testing.T) {
	r := rig.New(t)
	n := 0
	finished := false
	body := task.Flow(func(f *task.F) (int, error) {
		_, err := task.Await(f, task.Get("/a"))
		if err == nil {
			return 0, errors.New("no deadline")
		}
		for i := 0; i < 100; i++ {
			if _, err2 := task.Await(f, task.Value(i)); !errors.Is(err2, task.ErrDeadlineExceeded) {
				return 0, err2
			}
			n++
		}
		finished = true
		return 0, err
	})
	o := &rig.Outcome[int]{}
	executor.SubmitWith(r.Ex, body, executor.Options{Deadline: r.Clock.Now().Add(time.Second)}, o.K)
	r.Idle()
	r.Conn.Suspend()
	r.Idle()
	r.Advance(2 * time.Second)
	r.Advance(0) // the event queue's next turn
	if !finished {
		t.Fatalf("suspended session, deadline passed: the body got %d of its 100 Awaits' errors and has not returned", n)
	}
	o.Want(t, 1, task.ErrDeadlineExceeded)
}

// Await: "If the scope ends first (a deadline, a cancel, ...), Await
// returns the scope's error at once and t's late outcome is dropped";
// Cancel: "First it ends s ...: a late resume of one of its waits is
// dropped".
//
// An outer flow awaits an inner flow (which runs in the same scope) that
// falls back to a value on any error; the flow is canceled while the
// inner flow waits for a reply. Cancel's delivery abandons the inner
// Await first (the waits list is last-in first-out); the inner body
// returns ("default", nil), which reaches the outer Await's continuation
// before its abandonment: it must be dropped, as Suspend's resume and a
// request's Receive drop a result that comes after their scope ended.
func TestAwaitGetsScopeErrorNotInnerValueAfterCancel(t *testing.T) {
	r := rig.New(t)
	var outerV string
	var outerErr error
	returned := false
	inner := task.Flow(func(g *task.F) (string, error) {
		if _, err := task.Await(g, task.Get("/x")); err != nil {
			return "default", nil // a fallback on any error
		}
		return "read", nil
	})
	fl := executor.Submit(r.Ex, task.Flow(func(f *task.F) (int, error) {
		outerV, outerErr = task.Await(f, inner)
		returned = true
		return 0, outerErr
	}), nil)
	r.Idle()
	fl.Cancel()
	r.Idle()
	if !returned || !errors.Is(outerErr, task.ErrCanceled) {
		t.Fatalf("after Cancel the outer Await returned (%q, %v), want the scope's error ErrCanceled", outerV, outerErr)
	}
}

// Await: "Await ... with the handle of an outer flow while an inner one
// runs, returns ErrAwaitOutsideBody".
//
// A body starts an inner flow with task.Run (a body is a step, and steps
// start tasks with Run); the inner body awaits with the outer body's
// handle. The outer body is running too (it called Run): Await took the
// handle as the outer body's own, switched the outer coroutine from the
// inner goroutine and returned the value. Once the inner body has
// yielded, the outer body's handle is its own again.
func TestAwaitRefusesOuterHandleInInnerBody(t *testing.T) {
	r := rig.New(t)
	var innerV int
	var innerErr, outerErr error
	innerDone := false
	o := rig.Submit(r, task.Flow(func(f *task.F) (int, error) {
		task.Run(f.Scope(), task.Flow(func(g *task.F) (int, error) {
			innerV, innerErr = task.Await(f, task.Value(1)) //flowcheck:allow the test checks that an outer body's F is refused
			innerDone = true
			return 0, nil
		}), func(int, error) {})
		v, err := task.Await(f, task.Value(2))
		outerErr = err
		return v, err
	}))
	r.Idle()
	if !innerDone || !errors.Is(innerErr, task.ErrAwaitOutsideBody) {
		t.Fatalf("Await with the outer handle from an inner body: returned %v (value %d, err %v), want ErrAwaitOutsideBody",
			innerDone, innerV, innerErr)
	}
	if outerErr != nil {
		t.Fatalf("the outer body's own Await after the inner body ended: %v", outerErr)
	}
	o.Want(t, 1, nil)
}

// CloseAndWait: "CloseAndWait is Close, then done, ... once every
// deferred cleanup that Close started has ended"; Cancel: what the
// continuations and OnDone callbacks do may "close ... any scope, ...
// this one included".
//
// A scope with no cleanup and a step waiting in it; an OnDone callback
// (RunIn's own, or the user's) closes the scope. CloseAndWait's Close
// cancels the wait; the callback's Close (nested) counts the start, ends
// it and calls done; back in the outer Close, it counted and ended the
// start again and called done a second time.
func TestCloseAndWaitCallsDoneOnceWhenClosedFromOnDone(t *testing.T) {
	for _, how := range []string{"RunIn", "OnDone closes"} {
		t.Run(how, func(t *testing.T) {
			r := rig.New(t)
			dones := 0
			inFlowScope(r, func(s *task.Scope) {
				c := s.Child()
				if how == "RunIn" {
					task.RunIn(c, parked, func(int, error) {})
				} else {
					task.Run(c, parked, func(int, error) {})
					c.OnDone(func(error) { c.Close() })
				}
				c.CloseAndWait(func() { dones++ })
			})
			r.Idle()
			if dones != 1 {
				t.Fatalf("CloseAndWait's done ran %d times, want 1", dones)
			}
		})
	}
}

// OnDone: "OnDone registers fn to run ... when the scope is canceled (not
// when it is closed normally). fn runs at once if it already was."
//
// A child scope is closed normally (nothing waits in it), then OnDone is
// registered: Close's err (ErrCanceled, so that nothing starts in it) was
// taken for a cancellation, and fn ran at once.
func TestOnDoneNeverRunsOnNormallyClosedScope(t *testing.T) {
	r := rig.New(t)
	var got []error
	inFlowScope(r, func(s *task.Scope) {
		c := s.Child()
		c.Close() // closed normally: nothing waited, nothing canceled
		c.OnDone(func(err error) { got = append(got, err) })
	})
	if len(got) != 0 {
		t.Fatalf("OnDone on a scope closed normally ran with %v", got)
	}
}

// Suspend: "start may return a stop function, called when the wait is
// abandoned, to release what it holds".
//
// start resumes at once (a result already at hand) and returns a stop.
// The wait is resumed, never abandoned, yet Suspend called stop after k
// had run (its check for "canceled during start" was true for a wait
// resumed during start too).
func TestSuspendStopOnlyOnAbandon(t *testing.T) {
	r := rig.New(t)
	stops := 0
	var got []int
	inFlowScope(r, func(s *task.Scope) {
		c := s.Child()
		task.Run(c, task.Task[int](func(s *task.Scope, k task.Cont[int]) {
			task.Suspend(s, k, func(resume task.Cont[int]) func() {
				resume(7, nil)
				return func() { stops++ }
			})
		}), func(v int, err error) { got = append(got, v) })
		c.Close()
	})
	if stops != 0 {
		t.Fatalf("stop called %d times though the wait was resumed (with %v), never abandoned", stops, got)
	}
}

// Defer: "Defer registers cleanup to run when the scope closes, whatever
// its outcome".
//
// Defer on a scope that has closed: the cleanup was linked where nothing
// read it again, and never ran, unreported. It now starts at once, as a
// flow of its own.
func TestDeferOnClosedScopeStartsAtOnce(t *testing.T) {
	r := rig.New(t)
	ran := false
	inFlowScope(r, func(s *task.Scope) {
		c := s.Child()
		c.Close()
		c.Defer(task.Func(func(*task.Scope) (task.Unit, error) { ran = true; return task.Unit{}, nil }))
	})
	r.Idle()
	if !ran {
		t.Fatalf("a cleanup deferred on a closed scope did not run (errors reported: %v)", r.Errs)
	}
}

// ErrInvalidArgument: "an argument checked on the client is out of range
// (a nil task, ...)"; a bad argument gets a typed error, not a panic.
//
// CreateWith(nil), and Exec with a nil request or a nil pointer of a
// request type, run on an executor over fakezk. fakezk refuses a nil
// request with ErrInvalidArgument; the task package then named its path
// with req.NodePath() on the nil pointer and panicked on the executor
// goroutine (Exec(nil) earlier still).
func TestNilRequestFailsWithInvalidArgument(t *testing.T) {
	cases := []struct {
		name string
		t    task.Task[task.Unit]
	}{
		{"CreateWith(nil)", discard(task.CreateWith(nil))},
		{"Exec(nil)", exec(nil)},
		{"Exec(*GetDataRequest(nil))", exec((*task.GetDataRequest)(nil))},
		{"Exec(*AddWatchRequest(nil))", exec((*task.AddWatchRequest)(nil))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := fakezk.New(fakezk.Config{})
			defer srv.Close()
			ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), OnError: func(error) {}})
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Shutdown()
			ex.RunUntilIdle()
			var got []error
			executor.Submit(ex, c.t, func(_ task.Unit, err error) { got = append(got, err) })
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("%s panicked on the executor goroutine: %v", c.name, p)
					}
				}()
				ex.RunUntilIdle()
			}()
			var oe *task.OpError
			if len(got) != 1 || !errors.Is(got[0], task.ErrInvalidArgument) || !errors.As(got[0], &oe) {
				t.Fatalf("%s: outcomes %v, want one *OpError wrapping ErrInvalidArgument", c.name, got)
			}
		})
	}
}

func discard[T any](t task.Task[T]) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Run(s, t, func(_ T, err error) { k(task.Unit{}, err) })
	}
}

func exec(req task.Request) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Exec(s, req, func(_ task.Response, err error) { k(task.Unit{}, err) })
	}
}

// allocsPerAwait runs one flow whose body is body and returns the heap
// allocations of the run per Await.
func allocsPerAwait(t *testing.T, body func(f *task.F), awaits int) float64 {
	r := rig.New(t)
	fl := task.Flow(func(f *task.F) (int, error) { body(f); return 0, nil })
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	executor.Submit(r.Ex, fl, nil)
	r.Idle()
	runtime.ReadMemStats(&ms1)
	return float64(ms1.Mallocs-ms0.Mallocs) / float64(awaits)
}

// FLOWS.md, Costs: "Allocations per Await: none in the steady state."
//
// A body that awaits two types in turn (as a read-modify-write loop does:
// Get's Data, then Set's Stat), every task prebuilt. F kept one spare
// record: each Await of the other type found the spare of the wrong type,
// made a new record and its method value, and replaced the spare: two
// allocations per Await, against none with one type. Also three and four
// types in turn (it keeps up to four).
func TestAwaitAllocsNoneWithInterleavedTypes(t *testing.T) {
	const n = 12000
	vi, vs, vb, vf := task.Value(1), task.Value("s"), task.Value(true), task.Value(1.5)
	same := allocsPerAwait(t, func(f *task.F) {
		for i := 0; i < 4*n; i++ {
			task.Await(f, vi)
		}
	}, 4*n)
	for _, c := range []struct {
		name string
		body func(f *task.F)
	}{
		{"two types", func(f *task.F) {
			for i := 0; i < 2*n; i++ {
				task.Await(f, vi)
				task.Await(f, vs)
			}
		}},
		{"four types", func(f *task.F) {
			for i := 0; i < n; i++ {
				task.Await(f, vi)
				task.Await(f, vs)
				task.Await(f, vb)
				task.Await(f, vf)
			}
		}},
	} {
		if mixed := allocsPerAwait(t, c.body, 4*n); mixed > same+0.5 {
			t.Fatalf("allocations per Await: %.3f awaiting %s in turn, %.3f awaiting one", mixed, c.name, same)
		}
	}
}

package executor_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

var okGet = task.Response{Data: []byte("x")}

// A flow's continuation runs exactly once, whichever way the flow ends,
// including when a result arrives after the flow already ended.
func TestContinuationExactlyOnce(t *testing.T) {
	cases := []struct {
		name string
		run  func(r *rig.Rig) *rig.Outcome[task.Data]
		want error
	}{
		{"success", func(r *rig.Rig) *rig.Outcome[task.Data] {
			o := rig.Submit(r, task.Get("/a"))
			r.Idle()
			r.Conn.Pending()[0].Reply(okGet)
			return o
		}, nil},
		{"server error", func(r *rig.Rig) *rig.Outcome[task.Data] {
			o := rig.Submit(r, task.Get("/a"))
			r.Idle()
			r.Conn.Pending()[0].Fail(task.ErrNoNode)
			return o
		}, task.ErrNoNode},
		{"deadline then late reply", func(r *rig.Rig) *rig.Outcome[task.Data] {
			o := rig.Submit(r, c.Timeout(task.Get("/a"), time.Second))
			r.Idle()
			r.Advance(2 * time.Second)
			r.Conn.Pending()[0].Reply(okGet)
			return o
		}, task.ErrDeadlineExceeded},
		{"cancel then late reply", func(r *rig.Rig) *rig.Outcome[task.Data] {
			o := &rig.Outcome[task.Data]{}
			f := executor.Submit(r.Ex, task.Get("/a"), o.K)
			r.Idle()
			f.Cancel()
			r.Idle()
			r.Conn.Pending()[0].Reply(okGet)
			return o
		}, task.ErrCanceled},
		{"expiry then late reply", func(r *rig.Rig) *rig.Outcome[task.Data] {
			o := rig.Submit(r, task.Get("/a"))
			r.Idle()
			r.Conn.Expire()
			r.Idle()
			r.Conn.Pending()[0].Reply(okGet)
			return o
		}, task.ErrSessionExpired},
		{"close", func(r *rig.Rig) *rig.Outcome[task.Data] {
			o := rig.Submit(r, task.Get("/a"))
			r.Idle()
			r.Ex.Shutdown()
			return o
		}, task.ErrClosed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rig.New(t)
			o := tc.run(r)
			r.Idle()
			o.Want(t, 1, tc.want)
		})
	}
}

// Events are taken before tasks: a session change that arrived before a
// task is applied before the task runs.
func TestEventsBeforeTasks(t *testing.T) {
	r := rig.New(t)
	var order []string
	r.Ex.RunUntilIdle()
	executor.Submit(r.Ex, task.Func(func(s *task.Scope) (task.Unit, error) {
		_, st := s.Current()
		order = append(order, "task saw "+st.String())
		return task.Unit{}, nil
	}), nil)
	r.Conn.Suspend() // arrives after the submit, but is an event
	r.Idle()
	if len(order) != 0 {
		t.Fatalf("task ran while suspended: %v", order)
	}
	r.Conn.Connect(1)
	r.Idle()
	if len(order) != 1 || order[0] != "task saw Connected" {
		t.Fatalf("order = %v", order)
	}
}

// While suspended no step of any flow runs; on reconnect (same session)
// they resume where they were.
func TestPauseOnDisconnectResumeOnReconnect(t *testing.T) {
	r := rig.New(t)
	steps := 0
	step := func(string) task.Task[task.Data] {
		return c.Then(task.Get("/a"), func(task.Data) task.Task[task.Data] {
			steps++
			return task.Get("/b")
		})
	}
	o := rig.Submit(r, c.Then(step(""), func(task.Data) task.Task[task.Data] { return step("") }))
	r.Idle()
	r.Conn.Suspend()
	r.Conn.Pending()[0].Reply(okGet) // a reply that raced the disconnect
	ran := r.Idle()
	if steps != 0 {
		t.Fatalf("%d steps ran while suspended (%d jobs)", steps, ran)
	}
	if r.Ex.Paused() != true {
		t.Fatal("executor not paused")
	}
	r.Conn.Connect(1)
	r.Idle()
	if steps != 1 {
		t.Fatalf("steps after reconnect = %d, want 1", steps)
	}
	for len(r.Conn.Pending()) > 0 {
		r.Conn.Pending()[0].Reply(okGet)
		r.Idle()
	}
	o.Want(t, 1, nil)
	if steps != 2 {
		t.Fatalf("steps = %d, want 2", steps)
	}
	if s := r.Ex.SessionScope().Session(); s.Epoch != 1 || s.ID != 1 {
		t.Fatalf("session changed on resume: %v", s)
	}
}

// A Retry of an operation that failed with connection loss waits for the
// reconnect instead of spinning: no attempt is made while suspended.
func TestRetryWaitsForReconnect(t *testing.T) {
	r := rig.New(t)
	o := rig.Submit(r, c.Retry(task.Get("/a"), c.Policy{Attempts: 0}))
	r.Idle()
	r.Conn.Suspend()
	r.Conn.Pending()[0].Fail(task.ErrConnectionLoss)
	r.Idle()
	for range 100 {
		r.Advance(time.Second) // runs what the second's timers queue, a retry's backoff above all
	}
	if n := len(r.Conn.Calls()); n != 1 {
		t.Fatalf("%d attempts while suspended, want 1", n)
	}
	r.Conn.Connect(1)
	r.Idle()
	if n := len(r.Conn.Calls()); n != 2 {
		t.Fatalf("%d attempts after reconnect, want 2", n)
	}
	r.Conn.Pending()[0].Reply(okGet)
	r.Idle()
	o.Want(t, 1, nil)
}

// A deadline ends a flow even while the session is suspended, and the
// flow's registered cleanup runs once the session is back.
func TestDeadlineWhilePausedAndCleanup(t *testing.T) {
	r := rig.New(t)
	cleaned := 0
	body := func(s *task.Scope, k task.Cont[task.Data]) {
		s.Defer(task.Func(func(*task.Scope) (task.Unit, error) {
			cleaned++
			return task.Unit{}, nil
		}))
		task.Get("/a")(s, k)
	}
	o := rig.Submit(r, c.Timeout(task.Task[task.Data](body), time.Second))
	r.Idle()
	r.Conn.Suspend()
	r.Advance(2 * time.Second)
	o.Want(t, 1, task.ErrDeadlineExceeded)
	if cleaned != 0 {
		t.Fatal("cleanup ran while suspended")
	}
	r.Conn.Pending()[0].Reply(okGet) // late: dropped
	r.Conn.Connect(1)
	r.Idle()
	o.Want(t, 1, task.ErrDeadlineExceeded)
	if cleaned != 1 {
		t.Fatalf("cleanup ran %d times, want 1", cleaned)
	}
}

// A flow submitted while the session is suspended waits in the task
// queue, but its deadline and a Cancel end it at once, and it never starts
// once the session is back.
func TestNotStartedFlowDeadlineAndCancel(t *testing.T) {
	r := rig.New(t)
	r.Conn.Suspend()
	r.Idle()
	started := 0
	body := task.Func(func(*task.Scope) (task.Unit, error) { started++; return task.Unit{}, nil })
	byDeadline := &rig.Outcome[task.Unit]{}
	executor.SubmitWith(r.Ex, body, executor.Options{Deadline: r.Clock.Now().Add(time.Second)}, byDeadline.K)
	byCancel := &rig.Outcome[task.Unit]{}
	f := executor.Submit(r.Ex, body, byCancel.K)
	untouched := rig.Submit(r, body)
	r.Idle()
	byDeadline.Want(t, 0, nil)
	r.Advance(time.Second)
	byDeadline.Want(t, 1, task.ErrDeadlineExceeded)
	f.Cancel()
	r.Idle()
	byCancel.Want(t, 1, task.ErrCanceled)
	untouched.Want(t, 0, nil)
	r.Conn.Connect(1)
	r.Idle()
	byDeadline.Want(t, 1, task.ErrDeadlineExceeded)
	byCancel.Want(t, 1, task.ErrCanceled)
	untouched.Want(t, 1, nil)
	if started != 1 {
		t.Fatalf("bodies started %d times, want 1 (only the flow that was neither canceled nor past its deadline)", started)
	}
}

// A late completion after the deadline is discarded: the chain's next step
// never runs.
func TestLateCompletionDiscarded(t *testing.T) {
	r := rig.New(t)
	next := 0
	o := rig.Submit(r, c.Timeout(c.Then(task.Get("/a"), func(task.Data) task.Task[task.Unit] {
		next++
		return task.Done
	}), time.Second))
	r.Idle()
	r.Advance(time.Second)
	o.Want(t, 1, task.ErrDeadlineExceeded)
	r.Conn.Pending()[0].Reply(okGet)
	r.Idle()
	if next != 0 {
		t.Fatal("step after a late completion ran")
	}
	if len(r.Conn.Calls()) != 1 {
		t.Fatal("unexpected request after deadline")
	}
}

// Expiry fails the flows bound to the old session; flows submitted after
// it bind to the next session and run once it is established.
func TestExpiryFailsBoundFlows(t *testing.T) {
	r := rig.New(t)
	old := rig.Submit(r, c.Then(task.Get("/a"), func(task.Data) task.Task[task.Data] { return task.Get("/b") }))
	r.Idle()
	r.Conn.Suspend()
	r.Conn.Expire()
	r.Idle()
	old.Want(t, 1, task.ErrSessionExpired)
	var bound task.Session
	fresh := rig.Submit(r, task.Func(func(s *task.Scope) (task.Unit, error) {
		bound = s.Session()
		return task.Unit{}, nil
	}))
	r.Idle()
	fresh.Want(t, 0, nil)
	r.Conn.Pending()[0].Reply(okGet) // the old session's late reply
	r.Conn.Connect(2)
	r.Idle()
	fresh.Want(t, 1, nil)
	if bound.ID != 2 || bound.Epoch != 2 {
		t.Fatalf("new flow bound to %v, want id 2 epoch 2", bound)
	}
	if len(r.Conn.Calls()) != 1 {
		t.Fatal("the expired flow went on to its next step")
	}
}

// A new session id without an Expired event is still expiry.
func TestSilentSessionSwitchIsExpiry(t *testing.T) {
	r := rig.New(t)
	o := rig.Submit(r, task.Get("/a"))
	r.Idle()
	r.Conn.Connect(99)
	r.Idle()
	o.Want(t, 1, task.ErrSessionExpired)
	if s := r.Ex.SessionScope().Session(); s.ID != 99 || s.Epoch != 2 {
		t.Fatalf("session = %v", s)
	}
}

func stackDepth() int {
	pcs := make([]uintptr, 1<<16)
	return runtime.Callers(0, pcs)
}

// A chain of a million synchronous steps, built as nested Thens or run by
// Loop, does not grow the stack.
func TestMillionStepChainFlatStack(t *testing.T) {
	const n = 1_000_000
	r := rig.New(t)
	maxDepth := 0
	var chain func(i int) task.Task[int]
	chain = func(i int) task.Task[int] {
		if i == n {
			return task.Value(i)
		}
		return c.Then(task.Func(func(*task.Scope) (int, error) {
			if i%1000 == 0 {
				maxDepth = max(maxDepth, stackDepth())
			}
			return i, nil
		}), func(int) task.Task[int] { return chain(i + 1) })
	}
	o := rig.Submit(r, chain(0))
	r.Idle()
	o.Want(t, 1, nil)
	if o.V != n {
		t.Fatalf("chain ended at %d", o.V)
	}
	if maxDepth > 2000 {
		t.Fatalf("stack reached %d frames", maxDepth)
	}

	maxDepth = 0
	count := 0
	lo := rig.Submit(r, c.Loop(0, func(i int) bool { return i < n }, func(i int) task.Task[int] {
		count++
		if i%1000 == 0 {
			maxDepth = max(maxDepth, stackDepth())
		}
		return task.Value(i + 1)
	}))
	r.Idle()
	lo.Want(t, 1, nil)
	if lo.V != n || count != n {
		t.Fatalf("loop ran %d times, ended at %d", count, lo.V)
	}
	if maxDepth > 200 {
		t.Fatalf("loop stack reached %d frames", maxDepth)
	}
}

// An endless Retry of a synchronously failing task neither grows the stack
// nor stops, until its deadline.
func TestEndlessRetryFlatStack(t *testing.T) {
	r := rig.New(t)
	attempts, maxDepth := 0, 0
	flaky := task.Func(func(*task.Scope) (int, error) {
		attempts++
		if attempts%1000 == 0 {
			maxDepth = max(maxDepth, stackDepth())
		}
		if attempts == 200_000 {
			return attempts, nil
		}
		return 0, task.ErrNotSent
	})
	o := rig.Submit(r, c.Retry(flaky, c.Policy{}))
	r.Idle()
	o.Want(t, 1, nil)
	if attempts != 200_000 {
		t.Fatalf("attempts = %d", attempts)
	}
	if maxDepth > 200 {
		t.Fatalf("stack reached %d frames", maxDepth)
	}
}

// Submit is safe from many goroutines while the executor runs.
func TestSubmitFromManyGoroutines(t *testing.T) {
	ex, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error)
	go func() { runDone <- ex.Run(ctx) }()
	const G, N = 8, 500
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for g := range G {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range N {
				v, err := executor.Await(context.Background(), ex, task.Value(g*N+i))
				if err != nil || v != g*N+i {
					t.Errorf("Await = %d, %v", v, err)
					return
				}
				mu.Lock()
				total++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	cancel()
	if err := <-runDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v", err)
	}
	if total != G*N {
		t.Fatalf("total = %d", total)
	}
	// After the executor stopped, Submit fails at once.
	var got error
	executor.Submit(ex, task.Done, func(_ task.Unit, err error) { got = err })
	if !errors.Is(got, task.ErrClosed) {
		t.Fatalf("submit after stop: %v", got)
	}
}

// Await gives up when its context ends, cancels the flow, and the flow's
// cleanup runs.
func TestAwaitContextCancel(t *testing.T) {
	r := rig.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	cleaned := false
	body := task.Task[task.Data](func(s *task.Scope, k task.Cont[task.Data]) {
		s.Defer(task.Func(func(*task.Scope) (task.Unit, error) { cleaned = true; return task.Unit{}, nil }))
		task.Get("/a")(s, k)
	})
	errc := make(chan error, 1)
	go func() {
		_, err := executor.Await(ctx, r.Ex, body)
		errc <- err
	}()
	for len(r.Conn.Calls()) == 0 { // until the flow has started and sent
		r.Idle()
		runtime.Gosched()
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Await = %v", err)
	}
	r.Idle()
	if !cleaned {
		t.Fatal("cleanup did not run")
	}
	// A flow canceled before it starts never runs its body.
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	ran := false
	if _, err := executor.Await(ctx2, r.Ex, task.Func(func(*task.Scope) (int, error) { ran = true; return 0, nil })); !errors.Is(err, context.Canceled) {
		t.Fatalf("Await = %v", err)
	}
	r.Idle()
	if ran {
		t.Fatal("canceled flow ran")
	}
}

// Run stops on Close, failing what is left with ErrClosed, and closes the
// connection.
func TestRunClose(t *testing.T) {
	r := rig.New(t)
	o := rig.Submit(r, task.Get("/a"))
	r.Idle()
	done := make(chan error)
	go func() { done <- r.Ex.Run(context.Background()) }()
	r.Ex.Close()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	o.Want(t, 1, task.ErrClosed)
	if len(r.Conn.Pending()) != 0 {
		t.Fatal("connection not closed")
	}
}

// AwaitAcrossExpiry runs the task again on the next session when the
// session expires under it, and returns other errors as they are.
func TestAwaitAcrossExpiry(t *testing.T) {
	r := rig.New(t)
	type res struct {
		d   task.Data
		err error
	}
	ch := make(chan res, 1)
	go func() {
		d, err := executor.AwaitAcrossExpiry(context.Background(), r.Ex, task.Get("/a"))
		ch <- res{d, err}
	}()
	for len(r.Conn.Pending()) == 0 {
		r.Idle()
		runtime.Gosched()
	}
	r.Conn.Expire()
	r.Conn.Connect(2)
	for len(r.Conn.Pending()) != 2 { // the old call, and the retry on session 2
		r.Idle()
		runtime.Gosched()
	}
	r.Conn.Pending()[1].Reply(task.Response{Data: []byte("v")})
	for {
		r.Idle()
		select {
		case got := <-ch:
			if got.err != nil || string(got.d.Data) != "v" {
				t.Fatalf("got %q, %v", got.d.Data, got.err)
			}
			if n := len(r.Conn.Calls()); n != 2 {
				t.Fatalf("%d calls, want 2", n)
			}
			return
		default:
			runtime.Gosched()
		}
	}
}

// A reply that came in while the session was suspended waits in the task
// queue; the reconnect is an event, taken first: every subscriber hears
// the reconnect before the flow hears the reply (RUNTIME.md, "the task
// queue").
func TestReconnectReachesSubscribersBeforeQueuedReply(t *testing.T) {
	r := rig.New(t)
	var order []string
	unsub := r.Ex.Subscribe(func(ev task.Event) {
		if ev.State == task.StateConnected {
			order = append(order, "reconnect")
		}
	})
	defer unsub()
	o := rig.Submit(r, c.Map(task.Get("/a"), func(task.Data) task.Unit {
		order = append(order, "reply")
		return task.Unit{}
	}))
	r.Idle()
	r.Conn.Suspend()
	r.Idle()
	r.Conn.Pending()[0].Reply(okGet) // a reply that raced the disconnect
	r.Idle()
	if len(order) != 0 {
		t.Fatalf("ran while suspended: %v", order)
	}
	r.Conn.Connect(1)
	r.Idle()
	o.Want(t, 1, nil)
	if want := []string{"reconnect", "reply"}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
}

// An outcome that has come by the time Await looks wins over a ctx that
// ended too, also when Await was waiting and the ctx's end woke it: here
// the flow itself ends ctx and then returns its value, so that when the
// waiting goroutine runs (one thread: after the executor's step) the
// value is in. Await once returned task.ErrCanceled then, reporting as
// canceled work that had finished.
func TestAwaitOutcomeBesideContextEndWins(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	r := rig.New(t)
	for i := range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		ran := false
		body := task.Func(func(*task.Scope) (int, error) { ran = true; cancel(); return 7, nil })
		type outcome struct {
			v   int
			err error
		}
		res := make(chan outcome, 1)
		go func() {
			v, err := executor.Await(ctx, r.Ex, body)
			res <- outcome{v, err}
		}()
		for !ran { // the waiting goroutine submits and waits at each yield
			runtime.Gosched()
			r.Idle()
		}
		if o := <-res; o.err != nil || o.v != 7 {
			t.Fatalf("run %d: Await = %d, %v; want the flow's 7 (it had come when Await looked)", i, o.v, o.err)
		}
	}
}

package executor_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

// busy is a flow that never ends by itself and keeps the task queue busy:
// each iteration is one step (a read on the server, or a synchronous
// step), and the flow counts them. When giveUp is set it ends, so that a
// test that fails does not leave it running.
type busy struct {
	iters  atomic.Int64
	giveUp atomic.Bool
	// at, if set, is called on the executor goroutine at iteration n.
	// With inJob (at stops the executor), each iteration that runs in a
	// later job than at's is counted in after.
	at     func()
	n      int64
	inJob  bool
	after  atomic.Int64
	ended  chan error // the flow's outcome
	ex     *executor.Executor
	atStep uint64 // the job at ran in (executor goroutine only)
}

func newBusy(ex *executor.Executor) *busy { return &busy{ended: make(chan error, 1), ex: ex} }

// loop runs step again and again, counting the iterations.
func (b *busy) loop(step task.Task[task.Unit]) task.Task[task.Unit] {
	var next func(task.Unit) task.Task[task.Unit]
	next = func(task.Unit) task.Task[task.Unit] {
		n := b.iters.Add(1)
		if b.at != nil && n == b.n {
			b.atStep = b.ex.Steps()
			b.at()
		}
		if b.inJob && n > b.n && b.ex.Steps() != b.atStep {
			b.after.Add(1)
			b.giveUp.Store(true) // failed already: do not wait for the guard
		}
		if b.giveUp.Load() {
			return task.Value(task.Unit{})
		}
		return c.Then(step, next) // Then trampolines: the chain never grows the stack
	}
	return next(task.Unit{})
}

// reads loops reads of "/" on the server, forever.
func (b *busy) reads() task.Task[task.Unit] {
	return b.loop(c.Map(task.Exists("/"), func(*task.Stat) task.Unit { return task.Unit{} }))
}

// pure loops synchronous steps, forever: no request, no timer, only the
// task queue (each 64 nested steps go through it).
func (b *busy) pure() task.Task[task.Unit] { return b.loop(task.Value(task.Unit{})) }

func (b *busy) submit(t *testing.T, ex *executor.Executor, tk task.Task[task.Unit]) {
	t.Helper()
	executor.Submit(ex, tk, func(_ task.Unit, err error) { b.ended <- err })
}

// guard is how long a test waits for what the executor must do within its
// bound before it declares it not done (a real-time guard against a hang,
// not an ordering: every wait below is on a channel).
const guard = 10 * time.Second

// waitRun waits for Run's outcome on done; it fails t, and ends the busy
// flows so that Run can return, if Run is still running after guard.
func waitRun(t *testing.T, done <-chan error, bs ...*busy) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		for _, b := range bs {
			t.Errorf("Run still running %s after the stop: the busy flow ran %d iterations", guard, b.iters.Load())
			b.giveUp.Store(true)
		}
		return <-done
	}
}

// newServerExec returns an executor on a fresh in-memory server.
func newServerExec(t *testing.T) (*executor.Executor, *fakezk.Server, *fakezk.Conn) {
	t.Helper()
	srv := fakezk.New(fakezk.Config{})
	t.Cleanup(func() { srv.Close() })
	conn := srv.Connect(fakezk.ConnConfig{})
	ex, err := executor.New(executor.Config{Conn: conn, OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	return ex, srv, conn
}

// Close and the end of Run's ctx are honoured whatever the task queue
// holds: a flow that keeps it busy (reads on the server in a loop, or
// synchronous steps) ends with task.ErrClosed, takes no step after the
// stop, and Run returns (nil after Close, ctx's error after ctx ends).
func TestRunStopsUnderBusyFlow(t *testing.T) {
	for _, kind := range []string{"reads", "pure"} {
		for _, stop := range []string{"close", "ctx", "close in a job", "ctx in a job"} {
			t.Run(kind+"/"+stop, func(t *testing.T) {
				ex, _, _ := newServerExec(t)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				b := newBusy(ex)
				stopNow := func() {
					if stop == "close" || stop == "close in a job" {
						ex.Close()
					} else {
						cancel()
					}
				}
				const n = 1000
				reached := make(chan struct{})
				b.n = n
				b.at = func() { close(reached) }
				if stop == "close in a job" || stop == "ctx in a job" {
					b.at = func() { stopNow(); close(reached) }
					b.inJob = true
				}
				tk := b.reads()
				if kind == "pure" {
					tk = b.pure()
				}
				b.submit(t, ex, tk)
				done := make(chan error, 1)
				go func() { done <- ex.Run(ctx) }()
				<-reached
				if stop == "close" || stop == "ctx" {
					stopNow()
				}
				atStop := b.iters.Load()
				err := waitRun(t, done, b)
				if stop == "close" || stop == "close in a job" {
					if err != nil {
						t.Errorf("Run = %v after Close, want nil", err)
					}
				} else if !errors.Is(err, context.Canceled) {
					t.Errorf("Run = %v after its ctx ended, want context.Canceled", err)
				}
				if !t.Failed() {
					if got := <-b.ended; !errors.Is(got, task.ErrClosed) {
						t.Errorf("busy flow ended with %v, want task.ErrClosed", got)
					}
				}
				switch stop {
				case "close in a job", "ctx in a job":
					// Stopped on the executor goroutine: the job under way
					// ends, and no later job runs a step of the flow.
					if a := b.after.Load(); a != 0 {
						t.Errorf("the busy flow took %d steps in jobs after the stop's, want 0", a)
					}
				case "close":
					// Close returns once Run has stopped: not one step after.
					if got := b.iters.Load(); got != atStop {
						t.Errorf("the busy flow took %d steps after Close returned, want 0", got-atStop)
					}
				}
			})
		}
	}
}

// When Close returns, the executor refuses work: Submit's continuation
// and Await get task.ErrClosed at once, and nothing submitted after Close
// reaches the connection. The flows in flight at Close end with
// task.ErrClosed too.
func TestCloseRefusesLaterWork(t *testing.T) {
	for i := range 200 {
		ex, srv, _ := newServerExec(t)
		done := make(chan error, 1)
		go func() { done <- ex.Run(context.Background()) }()
		if _, err := executor.Await(context.Background(), ex, task.Exists("/")); err != nil {
			t.Fatalf("run %d: Await before Close: %v", i, err)
		}
		inFlight := newBusy(ex)
		inFlight.submit(t, ex, inFlight.reads())
		ex.Close()
		if _, err := executor.Await(context.Background(), ex, task.Exists("/")); !errors.Is(err, task.ErrClosed) {
			t.Errorf("run %d: Await after Close = %v, want task.ErrClosed", i, err)
		}
		var got error
		called := 0
		executor.Submit(ex, task.Create("/late", nil, task.Persistent), func(_ string, err error) { got = err; called++ })
		if called != 1 || !errors.Is(got, task.ErrClosed) {
			t.Errorf("run %d: Submit after Close: continuation called %d times (on the calling goroutine), with %v; want once, task.ErrClosed", i, called, got)
		}
		if err := waitRun(t, done, inFlight); err != nil {
			t.Errorf("run %d: Run = %v, want nil after Close", i, err)
		}
		if err := <-inFlight.ended; !errors.Is(err, task.ErrClosed) {
			t.Errorf("run %d: flow in flight at Close ended with %v, want task.ErrClosed", i, err)
		}
		if _, ok := srv.NodeStat("/late"); ok {
			t.Errorf("run %d: a create submitted after Close reached the server", i)
		}
		if t.Failed() {
			return
		}
	}
}

// Close on an executor driven by Step (a simulation's) refuses work at
// once and stops it at the next Step, before any other job: the flows in
// flight end with task.ErrClosed without taking another step, even with
// the task queue paused (session suspended), and the connection closes.
func TestCloseStepDriven(t *testing.T) {
	for _, suspended := range []bool{false, true} {
		r := rig.New(t)
		inFlight := rig.Submit(r, task.Get("/a"))
		r.Idle()
		if suspended {
			r.Conn.Suspend()
			r.Idle()
		}
		queued := 0
		executor.Submit(r.Ex, task.Func(func(*task.Scope) (int, error) { queued++; return 0, nil }), nil)
		r.Ex.Close() // from the goroutine that drives it: no Run, no wait
		late := rig.Submit(r, task.Get("/late"))
		late.Want(t, 1, task.ErrClosed) // at once, on the calling goroutine
		inFlight.Want(t, 0, nil)        // nothing has run since Close
		if !r.Ex.Step() {
			t.Fatal("the Step after Close ran nothing: it must shut the executor down")
		}
		inFlight.Want(t, 1, task.ErrClosed)
		if queued != 0 {
			t.Error("a flow queued before Close ran after it")
		}
		if r.Idle() != 0 {
			t.Error("jobs ran after the shutdown")
		}
		for _, call := range r.Conn.Calls() {
			if call.Req.NodePath() == "/late" {
				t.Error("a request submitted after Close was sent")
			}
		}
		if len(r.Conn.Pending()) != 0 {
			t.Error("connection not closed")
		}
		if err := r.Ex.Run(context.Background()); !errors.Is(err, executor.ErrStopped) {
			t.Errorf("Run after the shutdown = %v, want ErrStopped", err)
		}
	}
}

// The end of a context given to CloseWhenDone stops an executor driven by
// Step as Close does, at the next Step.
func TestCloseWhenDoneStepDriven(t *testing.T) {
	r := rig.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	r.Ex.CloseWhenDone(ctx)
	b := newBusy(r.Ex)
	var got error
	calls := 0
	executor.Submit(r.Ex, b.pure(), func(_ task.Unit, err error) { got = err; calls++ })
	for range 10 {
		r.Ex.Step()
	}
	cancel()
	at := b.iters.Load()
	if !r.Ex.Step() {
		t.Fatal("the Step after ctx ended ran nothing: it must shut the executor down")
	}
	if calls != 1 || !errors.Is(got, task.ErrClosed) {
		t.Errorf("busy flow: %d outcomes, last %v; want one, task.ErrClosed", calls, got)
	}
	if n := b.iters.Load(); n != at {
		t.Errorf("the busy flow took %d steps after ctx ended", n-at)
	}
	b.giveUp.Store(true) // if it still runs, let Idle end
	if r.Idle() != 0 {
		t.Error("jobs ran after the shutdown")
	}
}

// CloseWhenDone with a nil ctx (bad input) does nothing, as with one that
// never ends: no panic, and the executor runs on.
func TestCloseWhenDoneNilContext(t *testing.T) {
	r := rig.New(t)
	var nilCtx context.Context
	r.Ex.CloseWhenDone(nilCtx)
	ran := false
	executor.Submit(r.Ex, task.Func(func(*task.Scope) (task.Unit, error) { ran = true; return task.Unit{}, nil }), nil)
	r.Idle()
	if !ran {
		t.Fatal("the executor stopped running work after CloseWhenDone(nil)")
	}
}

// Close before Run: work submitted before it never runs (it ends with
// task.ErrClosed when Run stops the executor, at once), work submitted
// after it is refused, and Run returns nil.
func TestCloseBeforeRun(t *testing.T) {
	ex, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	before := make(chan error, 1)
	executor.Submit(ex, task.Func(func(*task.Scope) (int, error) { ran = true; return 0, nil }), func(_ int, err error) { before <- err })
	ex.Close() // no Run yet: nothing to wait for
	// With no Run, a wait would last forever: the guard ends it.
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if _, err := executor.Await(ctx, ex, task.Value(1)); !errors.Is(err, task.ErrClosed) {
		t.Errorf("Await after Close = %v, want task.ErrClosed", err)
	}
	if err := ex.Run(context.Background()); err != nil {
		t.Errorf("Run after Close = %v, want nil", err)
	}
	if err := <-before; !errors.Is(err, task.ErrClosed) || ran {
		t.Errorf("flow submitted before Close: ran %v, ended with %v; want not run, task.ErrClosed", ran, err)
	}
	ex.Close() // twice: harmless
}

// Close from several goroutines at once: each returns once Run has
// stopped the executor.
func TestCloseConcurrent(t *testing.T) {
	ex, _, _ := newServerExec(t)
	done := make(chan error, 1)
	go func() { done <- ex.Run(context.Background()) }()
	b := newBusy(ex)
	reached := make(chan struct{})
	b.n, b.at = 100, func() { close(reached) }
	b.submit(t, ex, b.reads())
	<-reached
	closed := make(chan int64, 4)
	for range 4 {
		go func() { ex.Close(); closed <- b.iters.Load() }()
	}
	var seen []int64
	for range 4 {
		seen = append(seen, <-closed)
	}
	if err := waitRun(t, done, b); err != nil {
		t.Errorf("Run = %v", err)
	}
	final := b.iters.Load()
	for _, n := range seen {
		if n != final {
			t.Errorf("a Close returned with the busy flow at %d steps, and it went on to %d", n, final)
		}
	}
}

// The flows in flight at Close end with task.ErrClosed; their deferred
// cleanups do not run a step (a cleanup is a flow of the session Close
// ended) and are reported to Config.OnError with task.ErrClosed.
func TestCloseCleanups(t *testing.T) {
	r := rig.New(t)
	cleaned := false
	o := rig.Submit(r, task.Task[task.Data](func(s *task.Scope, k task.Cont[task.Data]) {
		s.Defer(task.Func(func(*task.Scope) (task.Unit, error) { cleaned = true; return task.Unit{}, nil }))
		task.Run(s, task.Get("/a"), k)
	}))
	r.Idle()
	r.Ex.Close()
	r.Idle()
	o.Want(t, 1, task.ErrClosed)
	if cleaned {
		t.Error("a cleanup ran a step after Close")
	}
	found := false
	for _, err := range r.Errs {
		found = found || errors.Is(err, task.ErrClosed)
	}
	if !found {
		t.Errorf("the cleanup's end was not reported with task.ErrClosed: %v", r.Errs)
	}
}

// A flow Close refused is ended already: canceling it does nothing, and
// its continuation runs once.
func TestRefusedFlowCancel(t *testing.T) {
	r := rig.New(t)
	r.Ex.Close()
	calls := 0
	f := executor.SubmitWith(r.Ex, task.Get("/a"), executor.Options{Deadline: r.Clock.Now().Add(time.Second)},
		func(task.Data, error) { calls++ })
	f.Cancel()
	r.Advance(2 * time.Second)
	if calls != 1 {
		t.Errorf("continuation of a refused flow ran %d times, want 1", calls)
	}
}

// Close called from a job: the rest of that job sends nothing either (the
// request fails with task.ErrClosed, unsent), with or without an
// observer.
func TestCloseInJobSendsNothing(t *testing.T) {
	r := rig.New(t)
	o := rig.Submit(r, task.Task[task.Data](func(s *task.Scope, k task.Cont[task.Data]) {
		r.Ex.Close()
		task.Run(s, task.Get("/after"), k)
	}))
	r.Idle()
	o.Want(t, 1, task.ErrClosed)
	for _, call := range r.Conn.Calls() {
		if call.Req.NodePath() == "/after" {
			t.Error("a request made after Close, in the job that called it, was sent")
		}
	}
}

// The shutdown's cost is one short job per flow in flight, per queued
// item and per event the connection delivers as it closes: no flow takes
// a step in it.
func TestShutdownJobs(t *testing.T) {
	r := rig.New(t)
	const inFlight, queued = 30, 50
	var outs []*rig.Outcome[task.Data]
	for range inFlight {
		outs = append(outs, rig.Submit(r, task.Get("/a")))
	}
	r.Idle()
	r.Conn.Suspend() // what is submitted now waits in the task queue
	r.Idle()
	ran := 0
	for range queued {
		executor.Submit(r.Ex, task.Func(func(*task.Scope) (int, error) { ran++; return 0, nil }), func(int, error) {})
	}
	r.Ex.Close()
	before := r.Ex.Steps()
	r.Ex.Step()
	// The scripted connection delivers one event as it closes (Closed).
	if n, most := r.Ex.Steps()-before, uint64(inFlight+queued+1); n > most {
		t.Errorf("the shutdown ran %d jobs for %d flows in flight and %d queued, want at most %d", n, inFlight, queued, most)
	}
	if ran != 0 {
		t.Errorf("%d queued flows ran a step in the shutdown", ran)
	}
	for _, o := range outs {
		o.Want(t, 1, task.ErrClosed)
	}
}

// Many flows in flight at Close, each with a deferred cleanup, all end
// with task.ErrClosed: the shutdown's bound on jobs (for flows that loop
// on ErrClosed) cuts none of them off.
func TestShutdownManyFlowsNotCut(t *testing.T) {
	r := rig.New(t)
	const n = 5000
	var outs []*rig.Outcome[task.Data]
	for range n {
		outs = append(outs, rig.Submit(r, task.Task[task.Data](func(s *task.Scope, k task.Cont[task.Data]) {
			s.Defer(task.Func(func(*task.Scope) (task.Unit, error) { return task.Unit{}, nil }))
			task.Run(s, task.Get("/a"), k)
		})))
	}
	r.Idle()
	r.Ex.Close()
	r.Idle()
	for _, o := range outs {
		o.Want(t, 1, task.ErrClosed)
	}
	for _, err := range r.Errs {
		if strings.Contains(err.Error(), "kept scheduling") {
			t.Fatalf("the shutdown cut flows off that end on ErrClosed: %v", err)
		}
	}
}

// A job that panics ends Run with the panic (a programmer error); Close
// then returns instead of waiting for a shutdown that never comes.
func TestCloseAfterRunPanicked(t *testing.T) {
	ex, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		_ = ex.Run(context.Background())
	}()
	executor.Submit(ex, task.Func(func(*task.Scope) (int, error) { panic("boom") }), nil)
	if p := <-panicked; p != "boom" {
		t.Fatalf("Run's panic = %v, want boom", p)
	}
	closed := make(chan struct{})
	go func() { ex.Close(); close(closed) }()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("Close still waiting after Run ended in a panic")
	}
}

// A flow Submit handed to the executor just before Close gets its outcome
// (task.ErrClosed) by the time Close returns, however late the submitting
// goroutine runs on: here it is held between handing the flow over and
// waking Run while Close runs the whole shutdown.
func TestCloseEndsAFlowSubmittedAsItBegins(t *testing.T) {
	for _, driven := range []string{"run", "step"} {
		t.Run(driven, func(t *testing.T) {
			ex, err := executor.New(executor.Config{})
			if err != nil {
				t.Fatal(err)
			}
			ran := make(chan error, 1)
			if driven == "run" {
				go func() { ran <- ex.Run(context.Background()) }()
				// Run has started once a flow has run: Close waits for it.
				if _, err := executor.Await(context.Background(), ex, task.Value(task.Unit{})); err != nil {
					t.Fatal(err)
				}
			}
			posted, resume := make(chan struct{}), make(chan struct{})
			executor.SetAfterPost(ex, func() { close(posted); <-resume })
			got := make(chan error, 1)
			submitted := make(chan struct{})
			go func() {
				defer close(submitted)
				executor.Submit(ex, task.Value(task.Unit{}), func(_ task.Unit, err error) { got <- err })
			}()
			<-posted
			ex.Close()
			if driven == "step" {
				for ex.Step() {
				}
			}
			select {
			case err := <-got:
				if !errors.Is(err, task.ErrClosed) {
					t.Errorf("the flow ended with %v, want task.ErrClosed", err)
				}
			default:
				t.Errorf("the executor stopped (%s) without an outcome for a flow it had accepted: its continuation will never be called", driven)
			}
			close(resume)
			<-submitted
			if driven == "run" {
				if err := <-ran; err != nil {
					t.Errorf("Run: %v", err)
				}
			}
		})
	}
}

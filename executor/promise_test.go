package executor_test

// Promises of the package's documentation that an adversarial review found
// broken. Each test states the promise it checks (quoted from the doc),
// then the schedule that broke it; each fails on the code before its fix.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

// Package doc: "Misuse that would hang or corrupt the executor is refused
// at once: ... a nil executor ErrNilExecutor, a nil task task.ErrNilTask."
// Submit's doc: with a nil executor "k receives ErrNilExecutor ... at once,
// on the calling goroutine".
//
// Schedule: the session is suspended; Submit(ex, nil task, k). Before the
// fix k was not called at once: the nil task was queued as a flow and
// failed only when the task queue ran again, after a reconnect (never, if
// none came).
func TestSubmitRefusesNilTaskAtOnce(t *testing.T) {
	r := rig.New(t)
	r.Conn.Suspend()
	r.Idle()
	var got []error
	executor.Submit(r.Ex, task.Task[int](nil), func(_ int, err error) { got = append(got, err) })
	atOnce := len(got)
	r.Idle()
	idled := len(got)
	if atOnce != 1 || !errors.Is(got[0], task.ErrNilTask) {
		t.Fatalf("Submit(nil task): k called %d times at once, %d after the executor idled while suspended (%v); want once at once with task.ErrNilTask", atOnce, idled, got)
	}
}

// Submit's doc: "Once Close has been called, or the executor is stopping
// (Run's ctx ended, Shutdown), Submit refuses the flow: k receives
// task.ErrClosed at once, on the calling goroutine, nothing is sent".
//
// Schedule: Run drives the executor and is in the middle of a job (a step
// that waits for the test); Run's ctx ends; then Submit is called. Before
// the fix k was not called at once: the flow was accepted into the inbox
// and ended (on the executor goroutine) only when Run got to its shutdown.
func TestSubmitRefusedAtOnceAfterRunCtxEnded(t *testing.T) {
	ex, err := executor.New(executor.Config{Seed: 1, OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ex.Run(ctx) }()
	in, release := make(chan struct{}), make(chan struct{})
	executor.Submit(ex, task.Func(func(*task.Scope) (int, error) {
		close(in)
		<-release
		return 0, nil
	}), nil)
	<-in
	cancel() // Run's ctx has ended: the executor is stopping

	var calls atomic.Int32
	var gotErr atomic.Value
	executor.Submit(ex, task.Value(1), func(_ int, err error) {
		calls.Add(1)
		gotErr.Store(errorBox{err})
	})
	atOnce := calls.Load()
	close(release)
	<-done
	if atOnce != 1 {
		var later error
		if b, ok := gotErr.Load().(errorBox); ok {
			later = b.err
		}
		t.Fatalf("Submit after Run's ctx ended: k called %d times at once (later: %d calls, err %v), want once at once with task.ErrClosed", atOnce, calls.Load(), later)
	}
	if b := gotErr.Load().(errorBox); !errors.Is(b.err, task.ErrClosed) {
		t.Fatalf("k got %v, want task.ErrClosed", b.err)
	}
}

type errorBox struct{ err error }

// AwaitAcrossExpiry's doc: "when the session expires while t runs, runs t
// again on the next session, until t ends otherwise or ctx does".
//
// Schedule: no session expires; t itself fails with an error wrapping
// task.ErrSessionExpired (as any task does that uses a handle of an ended
// session). Before the fix AwaitAcrossExpiry ran t again at once on the
// same session, and went on doing so, a hot loop, until ctx ended (here t
// ends ctx on its second run so that the test stops).
func TestAwaitAcrossExpiryRunsAgainOnlyOnTheNextSession(t *testing.T) {
	ex, _, _ := newServerExec(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ex.Run(ctx) }()
	defer func() { ex.Close(); <-done }()
	if err := ex.Sync(ctx, "/"); err != nil { // connected
		t.Fatal(err)
	}

	actx, acancel := context.WithCancel(ctx)
	defer acancel()
	var runs []task.Session
	_, err := executor.AwaitAcrossExpiry(actx, ex, task.Func(func(s *task.Scope) (int, error) {
		runs = append(runs, s.Session())
		if len(runs) >= 2 {
			acancel() // stop the loop
		}
		return 0, task.ErrSessionExpired
	}))
	if len(runs) != 1 {
		t.Fatalf("t ran %d times on sessions %+v with no expiry between (AwaitAcrossExpiry returned %v); want one run: it is not the next session", len(runs), runs, err)
	}
}

// Close's doc: "when it returns, work submitted afterwards is refused ...,
// and no request reaches the connection any more, from any flow". Package
// doc: "Once Close has returned, ... no request reaches the connection".
//
// Schedule: an executor driven by Step (no Run). A step of a flow calls
// Send; Send asks stopAsked, which finds no Close yet; at that point
// another goroutine calls Close, which (no Run) returns at once. Before
// the fix Send then handed the request to the connection. The
// interleaving is forced by a stop context (CloseWhenDone) whose Done
// method is where stopAsked looks last: it lets Close run to its return
// there.
func TestNoRequestReachesConnAfterCloseReturned(t *testing.T) {
	r := rig.New(t)
	hc := &hookCtx{Context: context.Background(), ch: make(chan struct{})}
	hc.hook = func() {
		closed := make(chan struct{})
		go func() { r.Ex.Close(); close(closed) }()
		<-closed // Close has returned
		hc.closeReturned.Store(true)
	}
	r.Ex.CloseWhenDone(hc)
	var sentAfterClose atomic.Bool
	executor.Submit(r.Ex, func(s *task.Scope, k task.Cont[task.Data]) {
		hc.armed.Store(true) // the next stop check is Send's
		task.Get("/after-close")(s, k)
	}, nil)
	r.Idle()
	for _, c := range r.Conn.Calls() {
		if g, ok := c.Req.(*task.GetDataRequest); ok && g.Path == "/after-close" && hc.closeReturned.Load() {
			sentAfterClose.Store(true)
		}
	}
	if !hc.closeReturned.Load() {
		t.Fatal("the hook did not run: the schedule was not forced")
	}
	if sentAfterClose.Load() {
		t.Fatal("a request reached the connection after Close had returned")
	}
}

// hookCtx is a context that never ends; when armed, its Done runs hook once.
type hookCtx struct {
	context.Context
	ch            chan struct{}
	armed         atomic.Bool
	closeReturned atomic.Bool
	hook          func()
}

func (c *hookCtx) Done() <-chan struct{} {
	if c.armed.CompareAndSwap(true, false) {
		c.hook()
	}
	return c.ch
}

func (c *hookCtx) Err() error { return nil }

// Package doc: "Jobs run one at a time, to completion, on the goroutine
// that drives the executor." Shutdown, Step and RunUntilIdle "must be
// called on the executor goroutine", which a job runs on; none of them is
// refused there (Run is: ErrOnExecutor).
//
// Schedule: flow B waits for a reply; a step of flow A calls one of them
// and then marks itself done. Before the fix B's continuation (and other
// jobs) ran inside A's job, before A's step had finished.
func TestDriverCallInAJobRunsNoJobInside(t *testing.T) {
	for _, call := range []string{"Shutdown", "Step", "RunUntilIdle"} {
		t.Run(call, func(t *testing.T) {
			r := rig.New(t)
			aDone := false
			var bSaw []bool
			executor.Submit(r.Ex, task.Get("/b"), func(task.Data, error) { bSaw = append(bSaw, aDone) })
			r.Idle()
			executor.Submit(r.Ex, task.Func(func(*task.Scope) (task.Unit, error) {
				switch call {
				case "Shutdown":
					r.Ex.Shutdown()
				case "Step":
					r.Ex.Step()
				case "RunUntilIdle":
					r.Ex.RunUntilIdle()
				}
				aDone = true
				return task.Unit{}, nil
			}), nil)
			if call != "Shutdown" {
				// B's reply is queued after A's start: A's step runs first.
				r.Conn.Pending()[0].Reply(okGet)
			}
			r.Idle()
			if len(bSaw) != 1 {
				t.Fatalf("B's continuation ran %d times, want 1", len(bSaw))
			}
			if !bSaw[0] {
				t.Fatalf("%s called in A's job ran B's continuation inside A's job, before A's step finished", call)
			}
		})
	}
}

// Config.Observer "is told of ... session transitions"; task.SessionChange
// says: "SessionID is the id the event is about: the new session's for
// Connected, the old one's for Expired and Closed."
//
// Schedule: a fakezk session is expired by the server. Before the fix the
// Expired the observer was told of had SessionID 0, not the session that
// expired: the executor copied the Conn's event's SessionID (which no Conn
// fills for Expired: task.Conn's rules put it on Connected only) although
// it knew the id. (TestObserverSessions asserted the 0, against the
// field's doc.)
func TestObserverExpiredNamesTheEndedSession(t *testing.T) {
	r := newFakeRig(t)
	first := r.conn.SessionID()
	r.srv.Expire(r.conn)
	r.drive()
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	found := false
	for _, s := range r.rec.sessions {
		if s.To != task.StateExpired {
			continue
		}
		found = true
		if s.SessionID != first {
			t.Errorf("Expired told to the Observer with SessionID %#x, want the expired session's %#x", s.SessionID, first)
		}
	}
	if !found {
		t.Fatal("no Expired transition observed")
	}
}

// Executor.Observer's doc: "Observer returns the executor's Observer (nil
// if none)"; Config.Observer: "Nil costs one pointer check where each fact
// is learnt and allocates nothing".
//
// Schedule: New with no Observer and a Logger enabled for Debug. Before
// the fix Observer() was not nil: the executor made an Observer of its
// own to log operations (logOperations), and handed it out as the user's,
// so combinators.Retry and anything else that asks task.ObserverOf
// reported into it.
func TestObserverNilWithDebugLogger(t *testing.T) {
	l := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ex, err := executor.New(executor.Config{Seed: 1, Logger: l})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Shutdown()
	if o := ex.Observer(); o != nil {
		t.Fatalf("Observer() = %p with Config.Observer nil (a Debug Logger set), want nil", o)
	}
}

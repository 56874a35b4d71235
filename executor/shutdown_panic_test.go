package executor_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// never is a task that never ends by itself: only its scope's end (here
// the shutdown's ErrClosed) reaches its continuation.
func never(s *task.Scope, k task.Cont[int]) {
	task.Suspend(s, k, func(task.Cont[int]) func() { return nil })
}

// A job that panics while the shutdown runs (a body that panics on the
// ErrClosed its Await returns, a continuation that panics on it) sends the
// panic on up out of Run, as any job's does; the executor still stops as
// Close stops it: every other flow in flight gets task.ErrClosed, an Await
// on one returns, the connection is closed and no body's goroutine
// outlives the executor (goleak, TestMain).
func TestPanicDuringShutdownStillStopsTheExecutor(t *testing.T) {
	for _, who := range []string{"body", "continuation"} {
		t.Run(who, func(t *testing.T) {
			srv := fakezk.New(fakezk.Config{})
			defer srv.Close()
			conn := srv.Connect(fakezk.ConnConfig{})
			ex, panicked := runPanicking(t, conn, nil)
			// Flows in flight before and after the one that panics, as
			// plain chains and as bodies, each awaited by a goroutine.
			const n = 4
			started := make(chan struct{}, 4*n+1)
			waiting := func(s *task.Scope, k task.Cont[int]) {
				started <- struct{}{}
				never(s, k)
			}
			outs := make(chan error, 4*n)
			awaitOne := func(tk task.Task[int]) { // returns once the flow has started
				go func() {
					_, err := executor.Await(context.Background(), ex, tk)
					outs <- err
				}()
				<-started
			}
			body := task.Flow(func(f *task.F) (int, error) { return task.Await(f, task.Task[int](waiting)) })
			for range n {
				awaitOne(waiting)
				awaitOne(body)
			}
			// The flow that panics on the ErrClosed its step receives.
			var bad task.Task[int] = task.Flow(func(f *task.F) (int, error) {
				_, err := task.Await(f, task.Task[int](waiting))
				panic(fmt.Sprintf("body got %v", err))
			})
			var k task.Cont[int]
			if who == "continuation" {
				bad = waiting
				k = func(_ int, err error) { panic(fmt.Sprintf("continuation got %v", err)) }
			}
			executor.Submit(ex, bad, k)
			<-started
			for range n {
				awaitOne(waiting)
				awaitOne(body)
			}
			ex.Close()
			if p := <-panicked; p == nil {
				t.Fatal("Run returned without the panic of the job")
			}
			outcomes(t, outs, 4*n, task.ErrClosed, "flows in flight")
			if _, err := executor.Await(context.Background(), ex, task.Value(0)); !errors.Is(err, task.ErrClosed) {
				t.Errorf("Await after the shutdown = %v, want task.ErrClosed", err)
			}
		})
	}
}

// The same when Config.OnSession panics as it hears the Closed of the
// shutdown, and when it panics as it hears an expiry while Run drives
// the executor: the flows of the ended session get their outcome
// (task.ErrClosed, or task.ErrSessionExpired) before the panic goes on up
// out of Run, and an Await on one returns.
func TestPanicOnSessionEndStillEndsItsFlows(t *testing.T) {
	for _, end := range []string{"close", "expiry"} {
		t.Run(end, func(t *testing.T) {
			srv := fakezk.New(fakezk.Config{})
			defer srv.Close()
			conn := srv.Connect(fakezk.ConnConfig{})
			want := task.ErrClosed
			onSess := func(ev task.Event, _ task.Session) {
				if ev.State == task.StateClosed {
					panic("OnSession hears Closed")
				}
			}
			if end == "expiry" {
				want = task.ErrSessionExpired
				onSess = func(ev task.Event, _ task.Session) {
					if ev.State == task.StateExpired {
						panic("OnSession hears Expired")
					}
				}
			}
			ex, panicked := runPanicking(t, conn, onSess)
			const n = 4
			started := make(chan struct{}, 2*n)
			waiting := func(s *task.Scope, k task.Cont[int]) {
				started <- struct{}{}
				never(s, k)
			}
			body := task.Flow(func(f *task.F) (int, error) { return task.Await(f, task.Task[int](waiting)) })
			outs := make(chan error, 2*n)
			for range n {
				for _, tk := range []task.Task[int]{waiting, body} {
					go func() {
						_, err := executor.Await(context.Background(), ex, tk)
						outs <- err
					}()
					<-started
				}
			}
			if end == "close" {
				ex.Close()
			} else {
				srv.Expire(conn)
			}
			if p := <-panicked; p == nil {
				t.Fatal("Run returned without the panic of OnSession")
			}
			ex.Close()
			outcomes(t, outs, 2*n, want, "flows of the ended session")
		})
	}
}

// An executor driven by Step: a flow queued, not started, whose
// continuation panics on the task.ErrClosed the shutdown gives it, sends
// the panic on up out of Shutdown; the flows queued after it get
// task.ErrClosed too.
func TestPanicInAShutdownDrainStillEndsTheQueuedFlows(t *testing.T) {
	ex, err := executor.New(executor.Config{OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	var got []error
	executor.Submit(ex, task.Value(1), func(_ int, err error) { panic(fmt.Sprintf("continuation got %v", err)) })
	for range 4 {
		executor.Submit(ex, task.Value(1), func(_ int, err error) { got = append(got, err) })
	}
	ex.Close() // the next Step is the shutdown: the queued flows never start
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the continuation's panic did not reach the driver")
			}
		}()
		ex.Step()
	}()
	if len(got) != 4 {
		t.Fatalf("%d of the 4 flows queued after the one that panicked got an outcome, want all", len(got))
	}
	for _, err := range got {
		if !errors.Is(err, task.ErrClosed) {
			t.Errorf("a queued flow got %v, want task.ErrClosed", err)
		}
	}
	if _, err := executor.Await(context.Background(), ex, task.Value(0)); !errors.Is(err, task.ErrClosed) {
		t.Errorf("Await after the shutdown = %v, want task.ErrClosed", err)
	}
}

// runPanicking runs an executor on conn (with onSess as its OnSession, if
// set) on a goroutine of its own, which hands the panic Run sends up, or
// nil, to the channel returned.
func runPanicking(t *testing.T, conn task.Conn, onSess func(task.Event, task.Session)) (*executor.Executor, <-chan any) {
	t.Helper()
	ex, err := executor.New(executor.Config{Conn: conn, OnError: func(error) {}, OnSession: onSess})
	if err != nil {
		t.Fatal(err)
	}
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		_ = ex.Run(context.Background())
	}()
	return ex, panicked
}

// outcomes takes n outcomes of flows (what) from outs, each want, within
// guard: the stop the panic went through left none without one.
func outcomes(t *testing.T, outs <-chan error, n int, want error, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	for i := range n {
		select {
		case err := <-outs:
			if !errors.Is(err, want) {
				t.Errorf("one of the %s ended with %v, want %v", what, err, want)
			}
		case <-ctx.Done():
			t.Fatalf("%d of %d %s had no outcome %s after Run ended: the panic cut the stop short", n-i, n, what, guard)
		}
	}
}

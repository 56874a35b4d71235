// Package rig puts an executor on a scripted connection and a mock clock,
// for the runtime's own tests.
package rig

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/scriptconn"
	"github.com/zkflow/zkflow/task"
)

// Rig is an executor driven by hand (Step/RunUntilIdle on the test
// goroutine) on a scripted connection and a mock clock.
type Rig struct {
	T     testing.TB
	Ex    *executor.Executor
	Conn  *scriptconn.Conn
	Clock *clock.Mock
	Errs  []error // errors reported by detached flows

	timers timers // the executor's timers on Clock
}

// timers is the executor's clock: Clock's AfterFunc, with a record of
// each timer so that Advance can wait for the callbacks it fired. The
// mock clock runs each callback on a goroutine of its own and only
// sleeps a millisecond for it, so on a loaded machine the executor could
// be run to idle before the callback had queued its work.
type timers struct {
	m       *clock.Mock
	mu      sync.Mutex
	pending []*timer
}

type timer struct {
	when    time.Time
	t       *clock.Timer
	ran     atomic.Bool
	stopped atomic.Bool
}

func (ts *timers) Now() time.Time { return ts.m.Now() }

func (ts *timers) AfterFunc(d time.Duration, f func()) task.Timer {
	tm := &timer{when: ts.m.Now().Add(d)}
	ts.mu.Lock()
	ts.pending = append(ts.pending, tm)
	ts.mu.Unlock()
	tm.t = ts.m.AfterFunc(d, func() { f(); tm.ran.Store(true) })
	return tm
}

func (tm *timer) Stop() bool {
	if tm.t.Stop() {
		tm.stopped.Store(true)
		return true
	}
	return false
}

// due returns the timers not yet run or stopped that are due by now.
func (ts *timers) due(now time.Time) []*timer {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var due []*timer
	kept := ts.pending[:0]
	for _, tm := range ts.pending {
		if tm.ran.Load() || tm.stopped.Load() {
			continue
		}
		kept = append(kept, tm)
		if !tm.when.After(now) {
			due = append(due, tm)
		}
	}
	clear(ts.pending[len(kept):])
	ts.pending = kept
	return due
}

// settle waits until each of due has run its callback or been stopped;
// it reports false if one has not after 10 s.
func settle(due []*timer) bool {
	deadline := time.Now().Add(10 * time.Second)
	for _, tm := range due {
		for !tm.ran.Load() && !tm.stopped.Load() {
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(100 * time.Microsecond) // the mock's callback goroutine, not an event of the test
		}
	}
	return true
}

// New returns a rig connected to session 1. Its executor sends no sync
// after a reconnect (executor.Config.NoSyncAfterReconnect): the tests
// script and count every request, and NewSyncing's test that one.
func New(t testing.TB) *Rig {
	t.Helper()
	return newRig(t, true)
}

// NewSyncing is New with the executor's sync after a reconnect on, as
// executor.Config has it by default.
func NewSyncing(t testing.TB) *Rig {
	t.Helper()
	return newRig(t, false)
}

func newRig(t testing.TB, noSync bool) *Rig {
	t.Helper()
	r := &Rig{T: t, Conn: scriptconn.New(), Clock: clock.NewMock()}
	r.timers.m = r.Clock
	ex, err := executor.New(executor.Config{
		Conn: r.Conn, Clock: &r.timers, Seed: 1,
		OnError:              func(err error) { r.Errs = append(r.Errs, err) },
		NoSyncAfterReconnect: noSync,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.Ex = ex
	ex.RunUntilIdle() // starts the connection
	r.Conn.Connect(1)
	ex.RunUntilIdle()
	t.Cleanup(ex.Shutdown)
	return r
}

// Idle runs the executor until nothing is runnable.
func (r *Rig) Idle() int { return r.Ex.RunUntilIdle() }

// Advance moves the mock clock (firing due timers), waits for the
// executor's timer callbacks it fired, and runs until idle.
func (r *Rig) Advance(d time.Duration) {
	due := r.timers.due(r.Clock.Now().Add(d)) // those this Add fires
	r.Clock.Add(d)
	if !settle(due) {
		r.T.Fatalf("rig: a timer due by %v did not run its callback within 10s", r.Clock.Now())
	}
	r.Idle()
}

// Outcome records the continuation calls of one flow.
type Outcome[T any] struct {
	Calls int
	V     T
	Err   error
}

// K is the continuation to pass.
func (o *Outcome[T]) K(v T, err error) {
	o.Calls++
	o.V, o.Err = v, err
}

// Submit submits t with a recording continuation.
func Submit[T any](r *Rig, t task.Task[T]) *Outcome[T] {
	o := &Outcome[T]{}
	executor.Submit(r.Ex, t, o.K)
	return o
}

// Want fails the test unless the continuation ran calls times and, if it
// ran, with an error matching err (nil: success).
func (o *Outcome[T]) Want(t testing.TB, calls int, err error) {
	t.Helper()
	if o.Calls != calls {
		t.Fatalf("continuation called %d times, want %d (last err %v)", o.Calls, calls, o.Err)
	}
	if calls == 0 {
		return
	}
	if err == nil && o.Err != nil || err != nil && !errors.Is(o.Err, err) {
		t.Fatalf("err = %v, want %v", o.Err, err)
	}
}

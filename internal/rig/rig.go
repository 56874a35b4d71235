// Package rig puts an executor on a scripted connection and a mock clock,
// for the runtime's own tests.
package rig

import (
	"errors"
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
}

// New returns a rig connected to session 1.
func New(t testing.TB) *Rig {
	t.Helper()
	r := &Rig{T: t, Conn: scriptconn.New(), Clock: clock.NewMock()}
	ex, err := executor.New(executor.Config{
		Conn: r.Conn, Clock: task.FromClock(r.Clock), Seed: 1,
		OnError: func(err error) { r.Errs = append(r.Errs, err) },
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

// Advance moves the mock clock (firing due timers) and runs until idle.
func (r *Rig) Advance(d time.Duration) {
	r.Clock.Add(d)
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

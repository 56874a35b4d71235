package executor

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/zkflow/zkflow/task"
)

// ErrAlreadyRunning is returned at once by Run when another Run is driving
// the executor: one executor has one goroutine. The Run already under way
// goes on undisturbed.
var ErrAlreadyRunning = errors.New("executor: already running (Run called twice)")

// ErrOnExecutor is the error of a blocking call (Await, AwaitAcrossExpiry,
// Run) made on a goroutine that is running an executor's job: a task body,
// a continuation, a session or watch callback. Blocking there would stall
// the executor, which is the goroutine that would have to run the awaited
// flow, so the call fails at once instead. Start the flow with a
// combinator (Then, Fork) or task.Go instead of waiting for it.
var ErrOnExecutor = errors.New("executor: blocking call on an executor goroutine (a step must not block)")

// ErrNilExecutor is the error of Submit and Await given a nil executor.
var ErrNilExecutor = fmt.Errorf("%w: nil executor", task.ErrInvalidArgument)

// A goroutine is on an executor while it runs a job: everything the
// executor runs (flows, continuations, timers, session and watch callbacks,
// the cancellations of Shutdown) runs inside runJob, so runJob's frame is
// on the stack of the goroutine then and only then. onExecutorGoroutine
// looks for that frame by its return address, which costs the blocking
// call that asks a walk of its own stack (a few hundred nanoseconds for a
// shallow one) and costs Step nothing beyond the call. A goroutine that
// drives an executor with Step and calls Await between steps is not inside
// a job, and is rightly let through; a job of one executor that blocks on
// another (one goroutine drives many executors in a simulation) is not.

// runJob runs one job of an executor.
//
//go:noinline
func runJob(fn func()) { fn() }

// jobReturnPC is the return address of runJob's call of its job, as
// runtime.Callers reports it.
var jobReturnPC = func() uintptr {
	var pc [1]uintptr
	runJob(func() { runtime.Callers(2, pc[:]) })
	return pc[0]
}()

// onExecutorGoroutine reports whether the calling goroutine is running a
// job of an executor (any executor).
func onExecutorGoroutine() bool {
	var buf [32]uintptr
	pcs := buf[:]
	for {
		n := runtime.Callers(2, pcs)
		for _, pc := range pcs[:n] {
			if pc == jobReturnPC {
				return true
			}
		}
		if n < len(pcs) {
			return false
		}
		pcs = make([]uintptr, 4*len(pcs)) // a deep stack: walk it again, wider
	}
}

// CanBlock returns ErrOnExecutor when the calling goroutine is running a
// job of an executor (a task body, a continuation, a callback), where a
// call that waits for a flow would wait forever, and nil elsewhere. A
// blocking API built on Submit calls it first, as Await does.
func CanBlock() error {
	if onExecutorGoroutine() {
		return ErrOnExecutor
	}
	return nil
}

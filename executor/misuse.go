package executor

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/zkflow/zkflow/task"
)

// ErrAlreadyRunning is returned at once by Run when another Run is driving
// the executor: one executor has one goroutine. The Run already under way
// goes on undisturbed.
var ErrAlreadyRunning = errors.New("executor: already running (Run called twice)")

// ErrOnExecutor is the error of a blocking call (Await, AwaitAcrossExpiry,
// Run) made on a goroutine that is running an executor's job: a task body,
// a continuation, a session or watch callback, or the body of a task.Flow
// (which runs in lockstep with its executor). Blocking there would stall
// the executor, which is the goroutine that would have to run the awaited
// flow, so the call fails at once instead. Start the flow with a
// combinator (Then, Fork) or task.Go instead of waiting for it.
var ErrOnExecutor = errors.New("executor: blocking call on an executor goroutine (a step must not block)")

// ErrNilExecutor is the error of Submit and Await given a nil executor.
var ErrNilExecutor = fmt.Errorf("%w: nil executor", task.ErrInvalidArgument)

// ErrNilContext is the error of Await, AwaitAcrossExpiry, the blocking
// operations and Run given a nil context (use context.Background()). Run
// refuses it before it takes the executor, which a later Run may drive.
var ErrNilContext = fmt.Errorf("%w: nil context", task.ErrInvalidArgument)

// A goroutine is on an executor while it runs a job: everything the
// executor runs (flows, continuations, timers, session and watch callbacks,
// the cancellations of Shutdown) runs inside runJob, so runJob's frame is
// on the stack of the goroutine then and only then. onExecutorGoroutine
// looks for that frame by its return address, which costs the blocking
// call that asks a walk of its own stack (a few hundred nanoseconds for a
// shallow one), and only while some goroutine drives an executor (see
// drivers); it costs Step two atomic adds (RunUntilIdle and Run: two per
// call, not per job). A goroutine that
// drives an executor with Step and calls Await between steps is not inside
// a job, and is rightly let through; a job of one executor that blocks on
// another (one goroutine drives many executors in a simulation) is not.

// runJob runs one job of e, marked as under way (e.inJob) while it runs.
//
//go:noinline
func runJob(e *Executor, fn func()) {
	e.inJob = true
	// Deferred, so that a job that panics or whose flow body calls
	// runtime.Goexit leaves no mark: a Shutdown deferred by its driver
	// (run while the job's frames unwind, runJob's among them) stops the
	// executor rather than take itself for a call from inside a job.
	defer func() { e.inJob = false }()
	fn()
}

// jobReturnPC is the return address of runJob's call of its job, as
// runtime.Callers reports it.
var jobReturnPC = func() uintptr {
	var pc [1]uintptr
	runJob(&Executor{}, func() { runtime.Callers(2, pc[:]) })
	return pc[0]
}()

// jobUnderWay reports whether a job of e is under way on the calling
// goroutine, given e.inJob set: then Step, RunUntilIdle and Shutdown,
// called from it, must not run jobs of their own. A job that panicked
// left e.inJob set with no job under way any more (its runJob frame is
// gone from the stack); that is found here, and the mark cleared.
func (e *Executor) jobUnderWay() bool {
	if onExecutorGoroutine() {
		return true
	}
	e.inJob = false
	return false
}

// drivers counts the goroutines inside Step, RunUntilIdle, Run or
// Shutdown of some executor, the only calls that run jobs. While it is
// zero no goroutine runs a job, and onExecutorGoroutine answers without a
// walk of the stack: a goroutine that blocks on flows (a simulation's
// actors, a blocking Client) pays the walk only while some executor is
// being driven. A job that panics leaves its driver counted (its executor
// stays marked as driven): later answers take the walk, and stay right.
var drivers atomic.Int64

// enter counts e's goroutine as a driver, once however the calls nest,
// and reports whether this call did (then it must call leave).
func (e *Executor) enter() bool {
	if e.driving {
		return false
	}
	e.driving = true
	drivers.Add(1)
	return true
}

func (e *Executor) leave() {
	e.driving = false
	drivers.Add(-1)
}

// onExecutorGoroutine reports whether the calling goroutine is running a
// job of an executor (any executor).
func onExecutorGoroutine() bool {
	if drivers.Load() == 0 {
		// The caller counted itself before it ran any job (program
		// order), so it is not in one.
		return false
	}
	// A task.Flow body runs on a goroutine of its own, in lockstep with
	// its executor: it is on the executor too.
	return onStack(jobReturnPC) || task.InFlowBody()
}

// onStack reports whether the calling goroutine's stack holds a frame
// that returns to pc.
func onStack(pc uintptr) bool {
	var buf [32]uintptr
	pcs := buf[:]
	for {
		n := runtime.Callers(3, pcs)
		for _, p := range pcs[:n] {
			if p == pc {
				return true
			}
		}
		if n < len(pcs) {
			return false
		}
		pcs = make([]uintptr, 4*len(pcs)) // a deep stack: walk it again, wider
	}
}

// inConnDo reports whether the calling goroutine is inside an executor's
// call of Conn.Do (doSend), where it holds that executor's send gate.
func inConnDo() bool { return onStack(doReturnPC) }

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

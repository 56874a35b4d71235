package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/task"
)

// Flow is a handle on a submitted chain. Its methods are safe to call from
// any goroutine.
type Flow struct {
	e        *Executor
	mu       sync.Mutex
	scope    *task.Scope // executor goroutine writes it once, before it runs
	canceled error
	// run starts the flow, and ends it before it has started (executor
	// goroutine only; set before the flow is posted). A flow submitted
	// while the session is disconnected waits in the task queue, but its
	// cancellation and its deadline still end it at once, from the event
	// queue.
	run flowStarter
	// Executor goroutine only.
	started  bool
	done     bool // the outcome has been delivered (flowRun.finish)
	deadline task.Timer
}

// flowStarter is what a Flow runs: flowRun[T] for its T.
type flowStarter interface {
	runner
	abort(err error)
}

// Cancel ends the flow with task.ErrCanceled: it receives the error at its
// next step boundary (at once if it is waiting), and its deferred cleanups
// run. Canceling a finished flow does nothing.
func (f *Flow) Cancel() { f.cancel(task.ErrCanceled) }

func (f *Flow) cancel(err error) {
	if f.e == nil { // Submit refused it: there is nothing to cancel
		return
	}
	f.mu.Lock()
	if f.canceled == nil {
		f.canceled = err
	}
	// The first cancel's error, whichever job reaches the executor first:
	// two goroutines canceling at once (Cancel, an Await whose ctx ended)
	// would otherwise end the flow with the one that posted first.
	err = f.canceled
	f.mu.Unlock()
	f.e.post(item{fn: func() {
		if f.scope != nil {
			f.scope.Cancel(err)
		} else {
			f.run.abort(err)
		}
	}})
}

// Options are per-flow settings for SubmitWith.
type Options struct {
	// Deadline, if not zero, is the flow's absolute deadline on the
	// executor's clock: past it the flow fails with an error wrapping
	// task.ErrDeadlineExceeded that names what was waiting: the request
	// in flight (a *task.OpError: "zk get /a: deadline exceeded"), or the
	// queue, for a flow that had not started.
	Deadline time.Time
}

// Submit queues t as a new flow, bound to the session current when it
// starts, and returns at once. k, if not nil, receives the outcome on the
// executor goroutine, exactly once; a failed flow without k is reported to
// Config.OnError. Submit is safe to call from any goroutine; it is the only
// method of the package that is, with Flow.Cancel, Await and Close. Once
// Close has been called, or the executor is stopping (Run's ctx ended,
// Shutdown), Submit refuses the flow: k receives task.ErrClosed at once,
// on the calling goroutine, nothing is sent, and the Flow's Cancel does
// nothing; with a nil executor, k receives ErrNilExecutor, and with a nil
// task task.ErrNilTask, the same way (a nil task is never queued: it
// would otherwise fail only when the task queue next runs, which while the
// session is suspended may be never).
func Submit[T any](e *Executor, t task.Task[T], k task.Cont[T]) *Flow {
	return SubmitWith(e, t, Options{}, k)
}

// SubmitWith is Submit with per-flow options.
func SubmitWith[T any](e *Executor, t task.Task[T], opts Options, k task.Cont[T]) *Flow {
	if e == nil {
		if k != nil {
			var zero T
			k(zero, ErrNilExecutor)
		}
		return &Flow{}
	}
	if t == nil {
		if k != nil {
			var zero T
			k(zero, task.ErrNilTask)
		}
		return &Flow{}
	}
	r, st := newFlowRun[T](e)
	r.t, r.k, r.at = t, k, opts.Deadline
	if !r.submit(e, st) && k != nil {
		var zero T
		k(zero, task.ErrClosed)
	}
	return &r.f
}

// errQueuedPastDeadline ends a flow whose deadline passed before it started.
var errQueuedPastDeadline = fmt.Errorf("%w before the flow started (it waited in the executor's queue)", task.ErrDeadlineExceeded)

// flowRun is one submitted flow: its Flow handle, what it runs and where
// its outcome goes (k, or Await's channel). One value per flow: its
// methods are the flow's start, its continuation and its abort.
type flowRun[T any] struct {
	f  Flow
	t  task.Task[T]
	k  task.Cont[T]
	ch chan result[T] // Await's, instead of k
	at time.Time      // the deadline, if not zero
}

// observedRun is a flowRun with the task.FlowInfo its executor's
// Observer is told of (the flow's scope keeps it), made with it: one
// allocation per observed flow rather than two.
type observedRun[T any] struct {
	flowRun[T]
	info task.FlowInfo
}

// newFlowRun returns a new flow for e and what starts it: an observedRun
// when e has an Observer.
func newFlowRun[T any](e *Executor) (*flowRun[T], flowStarter) {
	if e.obs != nil {
		o := new(observedRun[T])
		return &o.flowRun, o
	}
	r := new(flowRun[T])
	return r, r
}

type result[T any] struct {
	v   T
	err error
	// moved: when the outcome was delivered, the session the flow was
	// bound to was no longer the executor's current one (it had expired).
	moved bool
}

// submit posts the flow, started by st (r, or the observedRun r is in);
// false if the executor refuses it (Close was called, or it is stopping
// or stopped). A refused flow's handle has no executor, so its Cancel
// does nothing.
func (r *flowRun[T]) submit(e *Executor, st flowStarter) bool {
	f := &r.f
	f.e, f.run = e, st
	var arm func()
	if !r.at.IsZero() {
		// Armed from the event queue, which runs while the task queue is
		// paused, so the deadline holds for a flow that has not started.
		arm = func() {
			switch {
			case f.started:
			case !e.runnable() && !e.clock.Now().Before(r.at):
				// Come already, and the task queue paused: at once, as
				// Scope.WithDeadline ends a started flow (a fake clock
				// fires a timer of 0 only when it next moves).
				r.abort(errQueuedPastDeadline)
			default:
				f.deadline = e.AfterFunc(r.at, func() { r.abort(errQueuedPastDeadline) })
			}
		}
	}
	if !e.postFlow(arm, st) {
		f.e, f.run = nil, nil
		return false
	}
	return true
}

func (r *flowRun[T]) run() { r.start(nil) }

func (r *observedRun[T]) run() { r.start(&r.info) }

// start starts the flow in a scope of its own under the session's (as
// task.RunIn does: the scope is closed once the outcome is delivered, and
// its cancellation delivers its error). info, if not nil, is where the
// Observer's FlowInfo goes.
func (r *flowRun[T]) start(info *task.FlowInfo) {
	f := &r.f
	if f.started {
		return
	}
	f.started = true
	if f.deadline != nil {
		f.deadline.Stop()
	}
	c := f.e.sessScope.WithDeadline(r.at)
	if o := f.e.obs; o != nil {
		f.e.flowStarted(o, c, info)
	}
	f.mu.Lock()
	f.scope = c
	canceled := f.canceled
	f.mu.Unlock()
	if canceled != nil {
		c.Cancel(canceled)
	}
	if r.k != nil && r.ch == nil && f.e.obs == nil {
		// finish would only close c and call k once: RunIn does that,
		// with one function made for it rather than two (r.ended and
		// r.finish).
		task.RunIn(c, r.t, r.k)
		return
	}
	c.OnDone(r.ended)
	task.Run(c, r.t, r.finish)
}

// abort ends the flow with err before it has started (canceled, or past
// its deadline, in the queue); once started, it does nothing. Once the
// shutdown has begun, err is task.ErrClosed: a Flow.Cancel made after a
// Close that did not wait for the shutdown (no Run), or a deadline that
// passed since, runs before the queued flow's start would, and the flow
// was in flight when Close returned.
func (r *flowRun[T]) abort(err error) {
	if r.f.started {
		return
	}
	r.f.started = true
	if r.f.e.down {
		err = task.ErrClosed
	}
	if o := r.f.e.obs; o != nil {
		// Never started: seen starting and ending at once.
		r.f.e.flowEnded(r.f.e.flowStarted(o, nil, nil), err)
	}
	r.ended(err)
}

// ended delivers err: the flow's scope was canceled, or it was aborted.
func (r *flowRun[T]) ended(err error) {
	var zero T
	r.finish(zero, err)
}

// finish delivers the outcome, once.
func (r *flowRun[T]) finish(v T, err error) {
	if r.f.done {
		return
	}
	r.f.done = true
	if c := r.f.scope; c != nil {
		c.Close()
	}
	if c := r.f.scope; c != nil && r.f.e.obs != nil {
		r.f.e.flowEnded(task.FlowOf(c), err)
	}
	switch {
	case r.ch != nil:
		res := result[T]{v: v, err: err}
		if c := r.f.scope; c != nil {
			res.moved = c.Session().Epoch != r.f.e.session.Epoch
		}
		r.ch <- res
	case r.k != nil:
		r.k(v, err)
	case err != nil:
		r.f.e.report(err)
	}
}

// Await submits t and waits for its outcome or for ctx to end. An outcome
// that has come when Await looks is returned, even if ctx has ended too.
// When ctx ends first, the flow is canceled (its cleanups run on the
// executor) and Await returns task.ErrCanceled, or an error wrapping
// task.ErrDeadlineExceeded that says whether the flow had started; they
// match context.Canceled and context.DeadlineExceeded under errors.Is. Someone
// must be running the executor (Run) for Await to return before ctx ends.
// After Close, or once Run's ctx has ended, Await returns task.ErrClosed
// at once and submits nothing, whether or not ctx has ended too.
//
// Await refuses at once what could only block forever or stall an
// executor: called on a goroutine that is running an executor's job (a task
// body, a continuation, a session or watch callback; of this executor or
// any other) it returns ErrOnExecutor; with a nil executor,
// ErrNilExecutor; with a nil ctx, ErrNilContext; with a nil task,
// task.ErrNilTask. The goroutine that
// drives the executor with Step may call Await between steps.
func Await[T any](ctx context.Context, e *Executor, t task.Task[T]) (T, error) {
	res := await(ctx, e, t)
	return res.v, res.err
}

// await is Await, with the flow's outcome as it came (moved set when the
// flow's session had ended by then).
func await[T any](ctx context.Context, e *Executor, t task.Task[T]) result[T] {
	switch {
	case e == nil:
		return result[T]{err: ErrNilExecutor}
	case ctx == nil:
		return result[T]{err: ErrNilContext}
	case t == nil:
		return result[T]{err: task.ErrNilTask}
	case onExecutorGoroutine():
		return result[T]{err: ErrOnExecutor}
	}
	if err := ctx.Err(); err != nil { // ended already: submit nothing
		if e.refuses() {
			// Closed too (Run's own ctx, passed here as well, has
			// ended): the executor's refusal is what the doc promises.
			return result[T]{err: task.ErrClosed}
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return result[T]{err: fmt.Errorf("executor.Await: %w: the context's deadline had passed before the flow was submitted", task.ErrDeadlineExceeded)}
		}
		return result[T]{err: task.ErrCanceled}
	}
	r, st := newFlowRun[T](e)
	r.t, r.ch = t, make(chan result[T], 1)
	f := &r.f
	if !r.submit(e, st) {
		return result[T]{err: task.ErrClosed}
	}
	if pk := park.From(ctx); pk != nil { // a simulation's goroutine (the closure is made only then)
		pk.Wait(func() bool { return len(r.ch) > 0 || ctx.Err() != nil })
	}
	// An outcome already in wins over a ctx that has ended too (a select
	// over both would pick at random): the flow's work is not reported
	// canceled, and a seeded simulation's history does not depend on the
	// pick.
	select {
	case res := <-r.ch:
		return res
	default:
	}
	select {
	case res := <-r.ch:
		return res
	case <-ctx.Done():
		select { // the outcome may have come after ctx's end woke us
		case res := <-r.ch:
			return res
		default:
		}
		err := error(task.ErrCanceled)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = task.ErrDeadlineExceeded
		}
		f.cancel(err)
		if err == task.ErrDeadlineExceeded {
			f.mu.Lock()
			started := f.scope != nil
			f.mu.Unlock()
			if started {
				err = fmt.Errorf("executor.Await: %w: the context's deadline passed while the flow ran", err)
			} else {
				err = fmt.Errorf("executor.Await: %w: the context's deadline passed before the flow started (it waited in the executor's queue)", err)
			}
		}
		return result[T]{err: err}
	}
}

// bugExpiryOverEndedContext: AwaitAcrossExpiry returns the expiry that
// ended t when ctx had ended by then too, as it once did, instead of
// ctx's end (a canary: masterworker/blocking catches it, a Client's Wait
// returning task.ErrSessionExpired).
const bugExpiryOverEndedContext canary.Name = "executor/expiry-over-ended-context"

// AwaitAcrossExpiry is Await that, when the session expires while t runs,
// runs t again on the next session, until t ends otherwise or ctx does.
// It is for tasks whose work an expiry undoes or leaves harmless (drawing
// an ID, say): the caller sees one outcome, not the expiry.
//
// It runs t again only when t failed with task.ErrSessionExpired and the
// session t was bound to had indeed ended by then (the executor had moved
// to the next one). A t that fails with task.ErrSessionExpired while its
// session is still current (it used a handle of an older session, say)
// is not run again: running it on the same session would fail the same
// way, at once, in a loop; that error is returned. (Under task.Conn's
// rules a connection reports a session's expiry before it fails requests
// with task.ErrSessionExpired, so a t that failed because its session
// expired always finds it ended.)
//
// A ctx that has ended by the time an expiry ends t (canceled as the
// expiry was reported, say) ends the call with its error, as Await's
// does, not with the expiry.
func AwaitAcrossExpiry[T any](ctx context.Context, e *Executor, t task.Task[T]) (T, error) {
	for {
		res := await(ctx, e, t)
		if res.moved && errors.Is(res.err, task.ErrSessionExpired) {
			if ctx.Err() == nil {
				continue
			}
			if canary.On(bugExpiryOverEndedContext) {
				return res.v, res.err
			}
			var zero T
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return zero, fmt.Errorf("executor.Await: %w: the context's deadline passed while the flow waited for the next session", task.ErrDeadlineExceeded)
			}
			return zero, task.ErrCanceled
		}
		return res.v, res.err
	}
}

// Run runs the executor on the calling goroutine until Close is called or
// ctx ends, then stops, and returns nil after Close, ctx's error
// otherwise. Stopping is what Close says: every flow ends with
// task.ErrClosed, and the connection is closed.
//
// Run honours Close and the end of ctx within a bound, whatever the queues
// hold: it looks for them before every job, so once either has happened it
// finishes the job under way (jobs are not preempted: a step that never
// returns holds Run) and starts no job of any flow's steps again. What it
// runs then is the shutdown: Conn.Close, and one short job per flow in
// flight, per item already queued and per event the connection delivers as
// it closes (each delivers task.ErrClosed or finds its flow ended), with no
// request sent. A flow that keeps the queues busy (a loop of reads, a chain
// of synchronous steps) takes no step after the stop. A flow that goes on
// scheduling steps after its steps failed with task.ErrClosed (a loop that
// retries whatever the error) is cut off: each of the shutdown's three
// phases runs at most 1,024 jobs beyond eight per job queued when it
// starts, then drops what is queued (those continuations are never
// called) and reports it to Config.OnError.
//
// An executor has one Run: a second Run while the first drives it returns
// ErrAlreadyRunning at once and leaves the first undisturbed, whatever its
// ctx; Run after the executor stopped returns ErrStopped; Run called from
// an executor's job returns ErrOnExecutor. Run after Close, on an executor
// that had no Run, stops it at once (its queued flows end with
// task.ErrClosed, none runs) and returns nil. Run on a nil executor
// returns ErrNilExecutor; Run with a nil ctx, ErrNilContext (the executor
// is left as it was). When the connection cannot start (Conn.Start
// fails: a Conn another executor started already, since a Conn serves one
// executor), the executor stops as Close stops it and Run returns that
// error. A job that panics sends the panic on up out of Run, and a flow
// body that calls runtime.Goexit (t.FailNow in a test) ends Run's
// goroutine: either way the executor stops first, as Close stops it, so
// that nothing waits for it (Close returns, flows in flight get
// task.ErrClosed, no body's goroutine outlives it). That holds for a job
// of the stop itself too (a body or continuation that panics on the
// task.ErrClosed it gets, a Config.OnSession that panics on the Closed):
// the rest of the stop runs before the panic goes on up.
func (e *Executor) Run(ctx context.Context) error {
	if e == nil {
		return ErrNilExecutor
	}
	if ctx == nil {
		return ErrNilContext
	}
	if onExecutorGoroutine() {
		return ErrOnExecutor
	}
	// Claimed under mu, as Shutdown claims e: never both driving it.
	e.mu.Lock()
	switch {
	case e.stopped.Load():
		e.mu.Unlock()
		return ErrStopped
	case e.running.Load():
		e.mu.Unlock()
		return ErrAlreadyRunning
	}
	e.running.Store(true)
	e.mu.Unlock()
	// A panic in a job is a programmer error and goes on up; a flow body
	// that calls runtime.Goexit (t.FailNow in a test) ends this goroutine.
	// Either way the executor stops on the way out, as Close stops it
	// (flows in flight end with task.ErrClosed, bodies unwound, the
	// connection closed), and Close does not wait for a Run that is gone.
	returned := false
	defer func() {
		if !returned {
			e.shutdown()
		}
		e.finished()
	}()
	e.CloseWhenDone(ctx)
	if ctx.Done() != nil {
		e.mu.Lock()
		e.runCtx = ctx // Submit refuses work once it has ended (postFlow)
		e.mu.Unlock()
	}
	for {
		entered := e.enter()
		for e.stepDriver() { // Step looks for Close and ctx's end before each job
		}
		if entered {
			e.leave()
		}
		if e.down {
			returned = true
			return e.stopErr
		}
		select {
		case <-e.wake:
		case <-ctx.Done(): // the next Step stops
		}
	}
}

// Close closes the executor: when it returns, work submitted afterwards is
// refused (Submit's continuation receives task.ErrClosed on the calling
// goroutine, Await returns it), and no request reaches the connection any
// more, from any flow (one made then fails with task.ErrClosed, unsent,
// even in the rest of the job that called Close). Every flow in flight ends
// with task.ErrClosed: its continuation (or Await) receives it, and its
// deferred cleanups do not run their steps (each is a flow of the session
// Close ends: it is reported to Config.OnError with task.ErrClosed), so a
// cleanup's request is never sent either; the connection is closed, which
// ends the session and its ephemeral nodes.
//
// Close waits, when a Run drives the executor, until Run has stopped it:
// the job under way ends and the shutdown runs (see Run for the bound).
// It cannot wait when it is called from a job (of this executor or of
// another: a task body, a continuation, a callback), nor when no Run has
// started (an executor driven by Step, or not yet run): it then refuses
// later work at once and returns; the executor stops before its next job
// (Run's, or Step's), so no step of a flow runs after the job that called
// it. Even then it waits for a request that the job under way is handing
// to the connection at that moment (a Conn.Do under way: Send's send
// gate), so that none reaches the connection after Close has returned;
// Conn.Do never blocks, so that wait is short. Close is safe from any
// goroutine and more than once: every call waits as the first would.
// Since the shutdown closes the connection, do not call Close where the
// connection's own goroutine runs (an Observer.OnOpEnd): it would wait
// for that goroutine. Close on a nil executor does nothing.
func (e *Executor) Close() {
	if e == nil {
		return
	}
	e.mu.Lock()
	e.refusing = true
	e.mu.Unlock()
	e.closeReq.Store(true)
	select {
	case e.wake <- struct{}{}:
	default:
	}
	// Every Send from now on finds closeReq under the gate; one that
	// looked before holds the gate until its Conn.Do has returned. Inside
	// a Conn.Do (a done the Conn calls before Do returns) the gate is
	// this goroutine's own, and the Send that holds it looked before.
	if !inConnDo() {
		e.sendMu.Lock()
		e.sendMu.Unlock() // an empty critical section: waiting for the gate is the point
	}
	if e.running.Load() && !onExecutorGoroutine() {
		<-e.done
	}
}

// Shutdown stops an executor driven by Step, at once, on the executor
// goroutine: what Run does when it stops (Close says what that is). On an
// executor a Run drives (or drove), Shutdown is Close: Run's goroutine
// stops it, and Shutdown waits for that as Close does.
// Called from a job of the executor (a step of a flow, a continuation, a
// callback), it cannot stop it at once, since jobs run one at a time, to
// completion: it does what Close does from a job (work is refused at
// once, no request reaches the connection, and the executor stops before
// its next job).
func (e *Executor) Shutdown() {
	if e.running.Load() {
		// Run drives e (or did): it stops it. Running the shutdown's
		// jobs here would run them beside Run's goroutine.
		e.Close()
		return
	}
	if e.inJob && e.jobUnderWay() {
		e.Close()
		return
	}
	// Claimed under mu, as Run claims e: a Run that begins on another
	// goroutine meanwhile finds e stopped (ErrStopped), or Shutdown finds
	// it driven (Close), never both driving.
	e.mu.Lock()
	if e.running.Load() {
		e.mu.Unlock()
		e.Close()
		return
	}
	first := !e.stopped.Swap(true)
	e.mu.Unlock()
	if !first {
		return
	}
	if e.beforeShut != nil {
		e.beforeShut()
	}
	if e.enter() {
		defer e.leave()
	}
	e.stop()
}

func (e *Executor) shutdown() {
	if e.stopped.Swap(true) {
		return
	}
	e.stop()
}

// stop is the shutdown, once stopped is set.
func (e *Executor) stop() {
	e.down = true
	e.mu.Lock()
	e.refusing = true
	e.mu.Unlock()
	if !e.started {
		e.started = true
	}
	e.shutdownPhases()
}

// The phases of a shutdown, in order (Executor.shutPhase).
const (
	shutCancel     = iota // end the session's flows (a job)
	shutDrain1            // run what that queued
	shutConnClose         // close the connection
	shutDrain2            // apply what it delivered as it closed, end what was queued meanwhile
	shutCloseInbox        // take nothing more
	shutDrain3            // end what was posted before that
	shutUnwind            // unwind the bodies still alive
	shutOver
)

// shutdownPhases runs the shutdown's phases from e.shutPhase on. A job
// that panics in one (a body, a continuation, a callback that panics on
// the task.ErrClosed it gets) does not cut the shutdown short: the
// phases left run before its panic goes on up (the deferred call does
// not recover it), so that the executor stops as Close says whatever its
// jobs do (flows in flight get task.ErrClosed, the connection is closed,
// no body's goroutine outlives it). A drain is run again after a job of
// it panicked (each job it ran is gone from the queues); the other phases
// are not: each is counted done as it begins, and its own code delivers
// the rest of what a panic interrupted (task.Delivery, task.Unwind).
func (e *Executor) shutdownPhases() {
	defer func() {
		if e.shutPhase < shutOver {
			e.shutdownPhases()
		}
	}()
	for e.shutPhase < shutOver {
		switch e.shutPhase {
		case shutCancel:
			e.shutPhase++
			runJob(e, func() { // what the cancellation runs is a job like any other
				task.NewJob(&e.frames)
				if e.state == task.StateClosed { // the connection said so already
					return
				}
				e.state = task.StateClosed
				ended := e.sessScope.CancelDeferred(task.ErrClosed)
				e.endSession(task.Event{Type: task.EventNone, State: task.StateClosed, SessionID: e.session.ID}, ended)
			})
		case shutDrain1, shutDrain2, shutDrain3:
			e.drainShutdown()
			e.shutPhase++
		case shutConnClose:
			e.shutPhase++
			if e.conn != nil {
				if err := e.conn.Close(); err != nil {
					e.report(err)
				}
			}
		case shutCloseInbox:
			e.mu.Lock()
			e.inboxClosed = true
			e.mu.Unlock()
			e.shutPhase++
		case shutUnwind:
			e.shutPhase++
			// Every task.Flow body has ended by now (the cancellation
			// reached its Await, and the task queue runs after Close);
			// one that loops on without awaiting again cannot hold a
			// goroutine past the shutdown.
			runJob(e, func() { task.Unwind(&e.frames) })
		}
	}
	e.finished()
}

// shutdownJobs bounds the jobs each phase of a shutdown runs beyond eight
// per job queued when it starts (see Run): flows that end on ErrClosed
// take one short job each, and a few more to hand their errors up; a flow
// that schedules its steps again whatever the error (a retry loop that
// does not know ErrClosed) is cut off there.
const shutdownJobs = 1024

// drainShutdown is RunUntilIdle for a phase of the shutdown, within
// shutdownJobs jobs beyond eight per job queued; past them, what is queued is
// dropped (its continuations are never called: the flows that keep
// scheduling steps) and reported, once.
func (e *Executor) drainShutdown() {
	e.drain()
	left := shutdownJobs + 8*(e.events.jobs.size+e.tasks.jobs.size)
	for left > 0 && e.stepDriver() {
		left--
	}
	if left > 0 {
		return
	}
	e.drain()
	if n := e.events.clear() + e.tasks.clear(); n > 0 && !e.shutCut {
		e.shutCut = true
		e.report(fmt.Errorf("executor: shutdown: flows kept scheduling steps after Close, %d jobs left queued: dropped; a flow must end when a step fails with task.ErrClosed", n))
	}
}

// finished releases the Close calls waiting for the shutdown.
func (e *Executor) finished() { e.finish.Do(func() { close(e.done) }) }

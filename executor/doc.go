// Package executor runs task chains on one goroutine.
//
// # Queues
//
// The executor has an inbox that other goroutines push into (Submit, the
// connection's callbacks, timers): pushing never blocks and nothing is
// dropped, the inbox grows as needed. Each Step moves the inbox into two
// queues and runs one job:
//
//   - the event queue (session-state changes, timer firings such as
//     deadlines, cancellations) is always taken from, and first;
//   - the task queue (submitted flows, completions of operations, watch
//     notifications, wake-ups from sleeps, trampolined continuations) is
//     taken from only while the session is connected. On Suspended the
//     executor stops taking from it; on reconnect it resumes. So a Retry
//     after connection loss waits for the reconnect instead of spinning,
//     and no step of any flow runs while the session is suspended.
//
// The job that runs is the one Step picked; jobs run one at a time, to
// completion, so recipe state needs no locks.
//
// # Core and goroutine
//
// Step and RunUntilIdle form a steppable core with no goroutine of its own:
// a simulation drives executors with them on one goroutine. Run(ctx) wraps
// the core for production. Only Submit, SubmitWith, Await, Flow.Cancel and
// Close are safe from other goroutines; every other method, and every
// task.Runtime method, must be called on the executor goroutine.
//
// # Stopping
//
// Close, the end of Run's ctx (or of a context given to CloseWhenDone)
// and Shutdown stop the executor. Close means what it says: once it has
// returned, Submit and Await refuse work with task.ErrClosed, and no
// request reaches the connection (one made then, even by the rest of the
// job that called Close, fails with task.ErrClosed, unsent). Every flow in
// flight ends with task.ErrClosed; its deferred cleanups do not run their
// steps (the session has ended: each is reported to Config.OnError with
// task.ErrClosed). The connection is closed, which ends the session.
//
// The bound: the core looks for a stop before every job, so once Close has
// been called or the ctx has ended, the job under way finishes (jobs are
// not preempted) and no later job runs a step of any flow. The next Step,
// or Run's next job, is the shutdown: Conn.Close, and one short job per
// flow in flight, per queued item and per event the connection delivers as
// it closes, with no request sent. That holds whatever the queues hold (a
// flow looping on reads, or on synchronous steps, does not hold Run) and
// while the task queue is paused. Close called from another goroutine while
// Run drives the executor returns once the shutdown is over; called from a
// job, or with no Run (Step driving, or before Run), it cannot wait: it
// refuses work at once, and the executor stops before its next job.
//
// Misuse that would hang or corrupt the executor is refused at once with
// a sentinel error, not left to a data race or a deadlock: a second Run
// while one drives the executor returns ErrAlreadyRunning (the first goes
// on); a blocking call (Await, AwaitAcrossExpiry, Run, and so every
// blocking recipe API built on them) made on a goroutine while it runs a
// job of any executor returns ErrOnExecutor, since that goroutine is the
// one that would have to run what is awaited; Await and Submit with a nil
// executor give ErrNilExecutor, with a nil task task.ErrNilTask. "Running
// a job" is exact: the goroutine that drives an executor with Step may
// block on it between steps (see misuse.go for how it is told).
//
// # Sessions
//
// The executor follows its connection's session: Connecting ->
// Connected(id, epoch) -> Suspended -> Connected (same session: resume) or
// Expired (every flow bound to the old session fails with
// task.ErrSessionExpired at once; later flows bind to the next session,
// whose epoch is one more). A Connected event with a new session id and no
// Expired before it is treated as expiry, never as a silent switch. Each
// flow is bound to the session current when it starts (Scope.Session);
// handles ask Scope.IsCurrent. The connection may move to a new session
// before the executor has applied the events that say so; a connection
// that implements task.SessionFollower (fakezk's and zkadapter's do) is
// told each session the executor takes as current and refuses, with
// task.ErrSessionExpired and unsent, requests made meanwhile by flows of
// the session that ended. A flow submitted while the session is suspended
// waits in the task queue, but its deadline and Flow.Cancel end it at once.
//
// The end of a session is published before its flows hear of it. On
// Expired (or a new session id, published as an Expired of the old
// session followed by the Connected), on a Closed from the connection, and
// on Close or Shutdown (published as Closed), the executor first ends
// every scope of the session (Err reports it, nothing more starts), then
// hands the event to Config.OnSession and every subscriber, and only then
// runs the continuations and OnDone callbacks of the ended flows. So
// inside any continuation of an ended session, every handle that follows
// the session through Subscribe (a lock, a leadership) already reports the
// end, even if another subscriber canceled scopes or resumed waits of that
// session while hearing it (its cancellations find them ended; late
// resumes are dropped).
//
// # Deadlines and cleanup
//
// Deadlines are absolute times on the executor's clock: Config.Clock, or,
// when nil, the Conn's own (a fakezk.Conn's is its server's), or else the
// wall clock. A deadline fires from the event queue, so it ends a flow
// even while the session is suspended; late completions are dropped;
// cleanups registered with Scope.Defer run as
// flows of their own, not bound by the deadline.
//
// # Observing
//
// Config.Observer (a task.Observer) is told of every flow's start and end
// (on the executor goroutine), every request as Send hands it to the
// connection (OnOpStart, executor goroutine) and its outcome (OnOpEnd, on
// the goroutine the connection completes it on, before the outcome is
// queued), every session transition as it is applied (before
// Config.OnSession and the subscribers), every retry of
// combinators.Retry, and the queue depths each time Step moves the inbox.
// Unset, each of those places checks one pointer and allocates nothing:
// BenchmarkOp (observe_bench_test.go) and the executor's other
// benchmarks allocate the same with the hook as before it. Set, a flow
// costs one allocation more (its task.FlowInfo) and an operation one more
// (the record carried from Send to its outcome): BenchmarkOp/observed. executor/otelzk turns the hook into
// OpenTelemetry metrics and traces. Config.Logger logs session transitions
// and, when enabled for Debug, each operation's outcome, with the session
// id, operation and path as attributes.
//
// # Performance
//
// See the combinators package documentation for the measured figures:
// one executor job is about 7 ns with 0 allocations, a no-op step of a
// running chain 9 to 13 ns with 0 allocations.
package executor

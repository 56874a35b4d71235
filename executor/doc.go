// Package executor runs task chains on one goroutine.
//
// An Executor owns one connection (task.Conn: zkadapter's or fakezk's) and
// runs every step of every flow on it, one at a time, so recipe state needs
// no locks. Submit starts a flow and calls back on the executor goroutine;
// Await starts one and blocks until its outcome or ctx's end.
//
//	ex, err := executor.New(executor.Config{Conn: conn}) // one executor per session
//	if err != nil {
//		return err
//	}
//	go ex.Run(ctx) // drives the executor until ctx ends, then closes conn
//	d, err := ex.Get(ctx, "/app/config")           // a plain operation, one call
//	v, err := executor.Await(ctx, ex, myFlow)        // any task: a flow, a chain
//
// Get, Set, Create, Delete, Children, Exists, Multi and Sync are the
// blocking face of ZooKeeper's plain operations: one request each, waited
// for as Await waits.
//
// Guarantees. Jobs run one at a time, to completion, on the goroutine that
// drives the executor. While the session is suspended the task queue
// pauses (it resumes on reconnect), so no reply and no queued step moves
// a flow on, and a Retry after connection loss waits for the reconnect
// instead of spinning; events (session changes, deadlines,
// cancellations) are taken even then. What an event's continuation runs
// then (the rest of a chain after a nested deadline fails, say) reaches
// no server: the executor fails each request sent while suspended with
// task.ErrNotSent, unsent (also when the connection is back and its
// Connected not yet applied, so nothing goes ahead of the sync below),
// and the flow hears of it after the reconnect. Deadlines are absolute times on the executor's clock
// (Config.Clock or, when nil, the Conn's own: a fakezk.Conn's is its
// server's; else the wall clock) and fire while suspended; late completions are dropped; cleanups registered with
// Scope.Defer run as flows of their own, not bound by the deadline.
//
// Sessions: each flow is bound to the session current when it starts.
// When that session expires, every flow bound to it fails with
// task.ErrSessionExpired at once and later flows bind to the next
// session; a new session id with no Expired before it is treated as
// expiry, never as a silent switch. The end of a session is published to
// Config.OnSession and every subscriber before its flows hear of it. A
// flow submitted while the session is suspended waits, but its deadline
// and Flow.Cancel end it at once. AwaitAcrossExpiry runs a task again on
// the next session when the session it ran on expired under it (not when
// it fails with task.ErrSessionExpired on a session still current).
//
// After a reconnect (to the same session or a new one) the executor sends
// a sync ahead of every other request of the new connection, pipelined
// (no request waits for it). ZooKeeper lets a session come back through
// any member that has applied the last zxid its client saw, not the
// writes whose replies the cut lost; the sync brings that member up to
// the leader first, so a flow that settles a lost write with a read sees
// it if it was applied. Config.NoSyncAfterReconnect turns it off; a flow
// then syncs before such a read itself (task/FLOWS.md).
//
// Stopping: Close, the end of Run's ctx, or Shutdown. Once Close has
// been called or Run's ctx has ended, Submit and Await refuse work with
// task.ErrClosed, at once; once Close has returned, no request reaches
// the connection, even when no Run drives the executor and a job is
// sending one as Close is called (Close waits for that Conn.Do to
// return); every flow in flight ends with
// task.ErrClosed (deferred cleanups do not run their steps: each is
// reported to Config.OnError), and the connection is closed, which ends
// the session. The job under way finishes; no later job runs a step.
//
// Goroutines and misuse. Submit, SubmitWith, Await, AwaitAcrossExpiry,
// the blocking operations (Get, Set, Create, Delete, Children, Exists,
// Multi, Sync), Flow.Cancel and Close are safe from other goroutines;
// every other method, and every task.Runtime method, must be called on
// the executor goroutine. Misuse that would hang or corrupt the executor
// is refused at once: a second Run gives ErrAlreadyRunning, and Step or
// RunUntilIdle on an executor a Run drives run nothing (false, 0); a
// blocking call (Await, AwaitAcrossExpiry,
// Run, and every blocking recipe API) made while running a job of any
// executor gives ErrOnExecutor; a nil executor ErrNilExecutor, a nil
// context (Await, Run, the blocking operations) ErrNilContext, a nil task
// task.ErrNilTask. Step, RunUntilIdle and Shutdown called from a job of
// the executor run no job inside it: Step reports false, RunUntilIdle
// returns 0, and Shutdown does what Close does from a job (the executor
// stops before its next job).
//
// Step and RunUntilIdle form a steppable core with no goroutine of its
// own: a simulation (fakezk/sim) drives executors with them on one
// goroutine. Config.Observer (a task.Observer) is told of every flow,
// operation, session transition, retry and queue depth; unset, it costs a
// pointer check and no allocation. executor/otelzk turns it into
// OpenTelemetry metrics and traces. Config.Logger logs session
// transitions and, at Debug, each operation's outcome (through an
// Observer of the executor's own, which Executor.Observer does not hand
// out).
//
// The queues, the stopping bound, the order of a session's end and the
// observer's hook points in full: executor/RUNTIME.md. The measured cost
// of a job, a step and a flow, with the command that measures them: the
// Figures section of the module's README.md.
package executor

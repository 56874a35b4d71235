// Package task defines the step of a coordination algorithm and everything
// a step needs: Task, the Scope it runs in, the error model, the Conn
// contract that zkadapter and fakezk implement, and the ZooKeeper
// operations as tasks.
//
// A Task is a description of work; an executor runs it:
//
//	bump := combinators.Then(task.Get("/app/config"), func(d task.Data) task.Task[task.Stat] {
//		return task.Set("/app/config", append(d.Data, '!'), d.Stat.Version) // nothing runs yet
//	})
//	st, err := executor.Await(ctx, ex, bump) // run it; task.ErrBadVersion if someone wrote in between
//
// # Straight-line tasks: Flow and Await
//
// Flow makes a Task of a Go function whose body awaits other tasks in
// straight lines: Await(f, t) runs t and returns its outcome.
//
//	isMine := task.Flow(func(f *task.F) (bool, error) {
//		d, err := task.Await(f, task.Get(job))
//		if err != nil {
//			return false, err
//		}
//		return d.Stat.EphemeralOwner == f.Scope().Session().ID, nil
//	})
//
// Such a task has every guarantee of a Task (ExampleFlow is a whole
// recipe). Its body runs as a coroutine in lockstep with the executor,
// only while the executor runs it, so it shares state with other steps
// without locks; it pauses at an Await while the session is suspended;
// a deadline, a cancel or the session's end makes the Await it waits in
// return the error. Its body is a step, so it must not block: no channel
// operations, no time.Sleep or wall-clock timers (await
// combinators.Sleep), no goroutines that touch its state or its *F, no
// blocking APIs (executor.Await and the recipes' blocking Clients refuse
// a body with executor.ErrOnExecutor). An Await costs about what a Then
// costs. FLOWS.md has the rules, the guarantees with their tests and the
// costs, measured.
//
// # The contract of a Task
//
// A Task[T] is a function func(*Scope, Cont[T]): a description of work.
// Running it starts the work; running it twice does the work twice, which is
// what lets combinators.Retry repeat it.
//
//   - A task body never blocks. It starts asynchronous work through its
//     Scope (an operation, a timer) and returns.
//   - Its continuation is called exactly once, with a value or an error, on
//     the executor goroutine; in race builds (make test) and with -tags
//     zkflow_invariants, Run panics with ErrContinuationReused when a task
//     calls k a second time.
//   - Continuations are trampolined: Run and Resume call directly while the
//     stack is shallow and bounce through the executor's task queue past a
//     small depth, so a chain of a million synchronous steps, or a Retry
//     that loops forever, does not grow the stack.
//   - Every Run is a step boundary: a scope that has ended (deadline passed,
//     canceled, session expired, executor closed) starts no further step and
//     hands its error down the chain.
//   - A panic in a step is a programmer error. It is not turned into an
//     error value; it crashes the executor goroutine.
//
// # Scopes and cancellation
//
// Every flow runs in a Scope, a node of a tree rooted at its session's
// scope. Canceling a scope (Scope.Cancel, a deadline, the session's
// expiry, the executor's Close) ends it and every scope under it before
// Cancel returns: each has Err() != nil and each chain parked in them has
// received the error. An ended scope takes no new child and drops late
// resumes. By the time any continuation of an ended session runs, every
// Runtime.Subscribe subscriber, and so every handle that follows the
// session through them, has heard the end.
//
// # Errors
//
// Operations fail with an *OpError naming the operation and path and
// wrapping a sentinel, tested with errors.Is: ErrConnectionLoss (sent,
// outcome unknown), ErrNotSent (certainly not applied), ErrSessionExpired,
// ErrClosed, ErrDeadlineExceeded, ErrNoNode, ErrNodeExists, ErrBadVersion,
// ErrNotEmpty, ErrNoChildrenForEphemerals, ErrInvalidPath, ErrDataTooLarge,
// ErrBadArguments, ErrNoAuth, ErrInvalidACL. Server codes are of type
// Code, so a code this package does not name keeps its number.
//
// ErrSessionExpired on a request that was sent leaves its outcome as
// unknown as ErrConnectionLoss does: a flow bound to a session that ended
// gets no continuation but the expiry, even for a request the server had
// applied and whose reply arrived just before the end. A write that must
// not be lost or repeated is settled by reading afterwards (the recipes
// do, for their own nodes), never by assuming it failed.
//
// # Access control
//
// A node carries an ACL, given at create (CreateWith) and replaced with
// SetACL; GetACL reads it. ZooKeeper checks a request against the ACL of
// one node, never its ancestors'; a failed check is ErrNoAuth, an invalid
// list ErrInvalidACL. Schemes: world:anyone, digest (DigestACL builds an
// entry for AuthInfo{Scheme: "digest", Auth: []byte("user:password")}),
// ip, and auth (the session's authenticated ids). Credentials belong to
// the connection: each Conn presents them on every connect, so a session
// keeps them across reconnects and a new session after an expiry gets
// them too. Watch only nodes the session can read: a watch on a node it
// may not READ gets no event for its changes.
//
// Observer is the runtime's one hook for metrics and traces (a nil one
// costs a pointer check); executor/otelzk builds on it. The scope tree's
// cancellation in full and the permission each operation needs:
// task/SCOPES_AND_ACLS.md.
package task

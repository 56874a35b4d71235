// Package task defines the step of a coordination algorithm and everything
// a step needs: Task, the Scope it runs in, the error model, the Conn
// contract that zkadapter and fakezk implement, and the ZooKeeper
// operations as tasks.
//
// Start reading at Task (task.go), then Scope (scope.go), then the
// operations (ops.go, watch.go). The Conn contract is in conn.go.
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
//     the executor goroutine. Tests of every combinator and of every way a
//     flow ends (success, error, deadline, cancel, expiry, close) check it;
//     in race builds (make test) and with -tags zkflow_invariants, Run
//     panics with ErrContinuationReused when a task calls k a second time.
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
// scope. Canceling a scope (Scope.Cancel, a deadline, the session's expiry,
// the executor's Close) ends it and every scope under it before Cancel
// returns: each has Err() != nil and each chain parked in them has
// received the error. Cancellation works in two phases: first every scope
// of the subtree ends (no code but the runtime's runs then), then the
// waits are abandoned and the OnDone callbacks run, children before
// parents. So whatever those continuations and callbacks do (close,
// cancel or create scopes anywhere, the one being canceled included) no
// scope escapes, and each of them already sees the whole subtree ended. An
// ended scope takes no new child and drops late resumes. Cancellation is
// linear in the scopes it ends and allocates nothing. A closed scope is
// unlinked from its parent and unlinks its children, so no scope stays
// linked under a closed one.
//
// The executor publishes the end of a session (Expired, Closed) to every
// Runtime.Subscribe subscriber between the two phases
// (Scope.CancelDeferred): by the time any continuation of an ended session
// runs, every subscriber, and so every handle that follows the session
// through them, has heard the end.
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
// # Observing
//
// Observer (observe.go) is the runtime's one hook: the executor, the
// connections and combinators.Retry call it with flows, operations and
// their outcomes, session transitions, retries, queue depths and
// connection facts, each on the goroutine that learnt the fact. A nil
// Observer costs a pointer check; executor/otelzk builds OpenTelemetry
// metrics and traces on it.
//
// # Access control
//
// A node carries an ACL, given at create (CreateWith) and replaced with
// SetACL; GetACL reads it. ZooKeeper checks a request against the ACL of
// one node, never its ancestors': create and delete against the parent's
// (CREATE, DELETE), Get, Children and a multi's check against the node's
// (READ), Set (WRITE), GetACL (READ or ADMIN; without ADMIN the ids of
// digest entries read "user:x"), SetACL (ADMIN); Exists and Sync need
// nothing. A failed check is ErrNoAuth. An entry grants its Perms to the
// sessions its scheme and id match:
//
//   - world:anyone matches every session;
//   - digest:user:hash matches a session whose connection presented the
//     credential AuthInfo{Scheme: "digest", Auth: []byte("user:password")},
//     hash being base64(sha1("user:password")); DigestACL builds such an
//     entry. An id with the password in clear text is valid but matches
//     no one;
//   - ip:a.b.c.d or ip:a.b.c.d/bits matches a client whose IPv4 address
//     is in that range;
//   - auth, in a create or a SetACL, stands for every authenticated id of
//     the session making the request (its digest ids): the server stores
//     those in its place, and refuses the list with ErrInvalidACL if the
//     session has none.
//
// An empty list, an unknown scheme or a malformed id is ErrInvalidACL.
//
// A watch is not notified of a change to a node its session may not READ
// (the parent, for a child change): ZooKeeper does so since the fix of
// CVE-2024-23944 (3.8.4; Debian's 3.8.0 has it too). Such a watch stays
// pending, with no event, until a later notification on its path reaches
// the session or the session ends: watch only nodes the session can read.
//
// Credentials belong to the connection: each Conn presents them on every
// connect, before any request, so a session keeps them across reconnects
// and a new session after an expiry gets them too.
package task

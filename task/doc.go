// Package task is for writing coordination code on ZooKeeper: a Task is
// one step of an algorithm (an operation, a wait, a whole recipe), and an
// executor runs it. A Task is a description: nothing runs until it is
// submitted, and running it twice does the work twice, which is what
// lets a retry repeat it.
//
// # Writing your own steps: Flow and Await
//
// Flow makes a Task of a Go function written in straight lines: inside
// it, Await(f, t) runs the task t and returns its outcome.
//
//	// claim creates job as ours; after a lost reply the node may be ours.
//	// lost(err): ErrConnectionLoss or ErrNotSent, the create may be made again.
//	claim := task.Flow(func(f *task.F) (bool, error) {
//		for {
//			_, err := task.Await(f, task.Create(job, owner, task.Ephemeral))
//			if err == nil || !errors.Is(err, task.ErrNodeExists) && !lost(err) {
//				return err == nil, err
//			}
//			d, err := task.Await(f, task.Get(job))
//			switch {
//			case err == nil:
//				return d.Stat.EphemeralOwner == f.Scope().Session().ID, nil
//			case !errors.Is(err, task.ErrNoNode) && !lost(err):
//				return false, err
//			} // the node has gone, or the reply was lost: create again
//		}
//	})
//	mine, err := executor.Await(ctx, ex, claim)
//
// A flow is a Task like any other: it awaits a combinators.Retry, and
// Retry, Deadline, Fork and All take it. Its body runs on the executor's
// goroutine, only while the executor runs it, so it shares state with
// other steps without locks; it pauses at an Await while the connection
// is lost; a deadline, a cancel or the session's end makes the Await
// return the error. The body must not block: no channel operations, no
// time.Sleep (await combinators.Sleep), no goroutines touching its state,
// no blocking client (executor.Await refuses it with
// executor.ErrOnExecutor). The analyzer task/flowcheck, run by make vet,
// catches the rest.
// An Await costs about what a Then costs. FLOWS.md has the rules, each
// guarantee with its test, and the costs, measured; ExampleFlow and the
// programs examples/claim, examples/lockflow and examples/flowcounter use
// flows, each with its simulation test.
//
// # The other face: chains
//
// The combinators package builds the same steps as values:
//
//	bump := combinators.Then(task.Get("/app/config"), func(d task.Data) task.Task[task.Stat] {
//		return task.Set("/app/config", append(d.Data, '!'), d.Stat.Version)
//	})
//
// Under both, a Task[T] is a func(*Scope, Cont[T]) that starts its work
// and returns without blocking. Its continuation is called exactly once,
// on the executor goroutine (race builds check it); continuations are
// trampolined, so a million synchronous steps do not grow the stack; a
// scope that has ended (deadline, cancel, session expiry, Close) starts
// no further step and hands its error down; a panic in a step crashes
// the executor goroutine.
//
// # Scopes, errors, access control
//
// Every flow runs in a Scope, a node of a tree rooted at its session's
// scope; canceling one ends it and every scope under it before Cancel
// returns. Operations fail with an *OpError wrapping a sentinel, tested
// with errors.Is: ErrConnectionLoss (sent, outcome unknown), ErrNotSent
// (certainly not applied), ErrSessionExpired (outcome unknown too), ErrClosed,
// ErrDeadlineExceeded, ErrNoNode, ErrNodeExists, ErrBadVersion,
// ErrNotEmpty, ErrNoChildrenForEphemerals, ErrInvalidPath,
// ErrDataTooLarge, ErrBadArguments, ErrNoAuth, ErrInvalidACL; other
// server codes are of type Code. A write whose outcome is unknown is
// settled by reading afterwards, never by assuming it failed. ACLs:
// CreateWith, SetACL, GetACL, DigestACL. Observer is the hook for metrics
// and traces (executor/otelzk). The scope tree, the errors and the ACL
// checks in full: SCOPES_AND_ACLS.md.
package task

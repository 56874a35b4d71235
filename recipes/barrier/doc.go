// Package barrier is ZooKeeper's barrier and double barrier recipes as
// task chains, with a context-first blocking API on top (Gate, Double).
//
// Start reading at Barrier (barrier.go), then DoubleBarrier.Enter and
// Participant.Leave (double.go), then the blocking API (blocking.go).
//
// Every operation is retried past connection loss (after the reconnect:
// the executor pauses while the session is suspended) and past "not
// sent". Every wait is a watch, and every wake-up is only a hint: the
// condition is checked again, with a new watch, after each one.
//
// # Barrier
//
// A node that, while it exists, holds every waiter.
//
//   - Set creates the node (persistent, with the caller's data) and its
//     missing ancestors. ErrNodeExists is success, so Set is idempotent and
//     a create whose reply was lost is simply retried.
//   - Remove deletes the node. ErrNoNode is success.
//   - Wait: (1) exists with a watch; (2) no node: return; (3) otherwise
//     wait for the watch; (4) whatever the event (deleted, data changed, or
//     the node removed and set again before we look), go to 1.
//
// Guarantee: Wait returns only after an exists that found no node, so a
// waiter passes only once the barrier has been removed (it may have been
// set again since: a later Set holds later waiters, not those already
// released). Errors: the scope's (deadline, cancel); task.ErrSessionExpired
// or task.ErrClosed when the session ends (the watch ends with it; Gate.Wait
// waits again on the next session).
//
// # Double barrier
//
// N participants enter together and leave together. The directory holds
// one ephemeral-sequential node per participant, named
// "_p_<id>-<sequence>" (the id is 128 bits from the executor's seeded
// source, unique per Enter), and the persistent node "ready". Other
// children are ignored.
//
// Enter:
//
//  1. exists DIR/ready with a watch, before creating our node (so that the
//     watch is set before anyone can count us). If ready exists, the
//     barrier was reached: we still create our node (step 2) and pass.
//  2. create DIR/_p_<id>- ephemeral-sequential. ErrNoNode: create DIR and
//     its ancestors, then create again. ErrNotSent: create again.
//     ErrConnectionLoss (the create may or may not have been applied):
//     after the reconnect, list DIR and look for children with our prefix
//     whose ephemeralOwner is our session; one found is our node, none
//     means the create was not applied (the session's requests are applied
//     in order), so create again. A participant therefore never counts
//     twice.
//  3. list DIR without a watch. If our node is missing, fail with
//     ErrParticipantLost (someone deleted it). With N or more participant
//     nodes, create DIR/ready (ErrNodeExists is success) and pass.
//  4. otherwise wait for the watch on ready. After the wake-up, exists DIR/ready
//     with a new watch: there, pass; not there, go to 3.
//
// Guarantee: a participant passes only after some participant listed N
// participant nodes, at most one per Enter (a lost create never leaves a
// second node); ready is created only then and never deleted by the
// recipe, so a participant whose watch fired finds it when it checks
// again. (An Enter that fails, by deadline say, counted while its node
// existed: its cleanup deletes the node, but a listing made before that
// may have counted it.)
//
// If Enter ends in any way but success (deadline, cancel, an error), a
// cleanup registered with Scope.Defer before the create runs as a flow of
// its own, not bound by the caller's deadline: it deletes our node, or,
// if the create's outcome was unknown, the children with our prefix owned
// by our session, retrying past connection loss. If the session has
// ended, the node went with it. So a failed Enter leaves no node.
//
// Leave (ZooKeeper's recipe, re-listing after every wake-up):
//
//  1. list DIR's participant nodes, ordered by sequence. None (or no
//     DIR): return.
//  2. only ours: delete it and return.
//  3. ours is the lowest: exists-with-watch on the highest; when it is
//     gone (already, or when the watch fires) go to 1.
//  4. otherwise: delete ours if it is still there, then exists-with-watch
//     on the lowest; when it is gone go to 1.
//
// The lowest participant deletes its node last: the others wait on it, and
// it waits on the highest, so a deletion wakes at most the lowest until the
// lowest leaves, which wakes the rest.
// Guarantee: Leave returns only after a listing with no participant node
// but perhaps its own, which it then deletes: every participant that had
// entered has left (deleted its node) or lost its session. Leave may be
// run again after a failure, also on a new session: our node is then gone
// and Leave only waits (Double.Leave does so across an expiry). If Leave
// ends early (deadline, cancel), a cleanup flow still deletes our node.
//
// A directory serves one round: ready stays after the round (a
// participant that lost its session during Enter and enters again still
// passes, and a late participant passes at once). Use a new directory per
// round, e.g. one named after the round; delete old ones when every
// participant has left. (A directory entered again anyway costs memory:
// each Enter sets a watch on ready that nothing fires while ready stays,
// and the server and the client library keep it for the session's life.)
//
// # Errors
//
// Constructors: task.ErrInvalidPath (an invalid path, the root, under
// /zookeeper), task.ErrInvalidArgument (N < 1, a nil executor, Leave of a
// nil participant). Tasks: the scope's error (task.ErrDeadlineExceeded,
// task.ErrCanceled, matching the context errors under errors.Is),
// task.ErrSessionExpired, task.ErrClosed, ErrParticipantLost,
// task.ErrDataTooLarge (Set), or an *task.OpError of an operation that a
// retry cannot settle (task.ErrNoAuth, say).
//
// # Tests
//
// The simulations (sim_test.go) run the recipes over hundreds of seeds
// with fault plans drawn by fakezk/sim (connection drops with requests
// applied or not, short and long partitions, expiries, delays, server
// restarts, clock jumps), and with the replies of creates lost on top.
// Canaries (internal/canary) switch known bugs back on, and each is caught
// (canary_test.go).
package barrier

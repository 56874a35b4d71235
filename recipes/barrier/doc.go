// Package barrier is ZooKeeper's barrier and double barrier recipes: a
// barrier holds every waiter while its node exists; a double barrier lets
// N participants enter together and leave together. They are the
// counterparts of Apache Curator's DistributedBarrier and
// DistributedDoubleBarrier and of kazoo's Barrier and DoubleBarrier.
//
// Wait returns only once the barrier has been removed (after an exists
// that found no node). A participant passes Enter only after some
// participant listed N participant nodes, at most one per Enter; Leave
// returns only once every participant that had entered has left (deleted
// its node) or lost its session. Every wake-up is only a hint: the
// condition is checked again after each one. A failed Enter leaves no
// participant node, and if Leave ends early a cleanup still deletes its
// node: DoubleClient.Leave deletes it whatever its ctx, even one that has
// ended (it then returns ctx's error at once).
//
//	gate, err := barrier.NewClient(ex, "/app/deploy")
//	err = gate.Set(ctx, nil) // one process holds the others...
//	err = gate.Wait(ctx)     // ...which wait here until it calls gate.Remove(ctx)
//
//	round, err := barrier.NewDoubleClient(ex, "/app/rounds/42", 3)
//	p, err := round.Enter(ctx) // waits until 3 participants have entered
//	if err != nil {
//		return err
//	}
//	// ... the round's work, with the others ...
//	return round.Leave(ctx, p) // waits until all 3 have left
//
// To compose with other tasks, use the task face: New returns a Barrier
// whose Set, Wait and Remove, and NewDouble a DoubleBarrier whose Enter
// and the Participant's Leave, are task.Task values to run on an executor
// yourself; Client and DoubleClient run them and wait.
//
// Start reading at Barrier (barrier.go), then DoubleBarrier.Enter and
// Participant.Leave (double.go), then the blocking API (client.go). The
// option WithACL sets the ACL of every node a barrier creates
// (task.OpenACL by default).
//
// # Retries and wake-ups
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
// or task.ErrClosed when the session ends (the watch ends with it; Client.Wait
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
//     in order), so create again. A child with our prefix that is not our
//     session's is counted already: our node created again at its path by
//     an operator (see Operators below), or the node of an earlier process
//     with the same executor seed (the same prefix) whose session has not
//     expired yet. We take it as our place and do not create again. A
//     participant therefore never counts twice.
//  3. exists DIR/<our node> with a watch (unless ready existed at step 1:
//     then pass). Missing: fail with ErrParticipantLost.
//  4. list DIR without a watch. If our node is missing, fail with
//     ErrParticipantLost (someone deleted it). With N or more participant
//     nodes, create DIR/ready (ErrNodeExists is success) and pass.
//  5. otherwise wait for the first of the watches on ready and on our node.
//     Ready's: exists DIR/ready with a new watch: there, pass; not there,
//     go to 4. Our node's: exists it again with a new watch: gone, fail
//     with ErrParticipantLost; there (its data written, or a node created
//     again at its path), go on waiting (5).
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
// its own, not bound by the caller's deadline: it deletes our node if our
// session owns it, or, if the create's outcome was unknown, the children
// with our prefix owned by our session, retrying past connection loss and
// deleting only the incarnation it read (zkops.DeleteOwned). If the session has
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
// lowest leaves, which wakes the rest. "Delete ours" is a read, then a
// delete of the node read if its owner is our session; after a lost reply
// it reads again and deletes only that incarnation (zkops.DeleteNode), so
// it never deletes a node someone else created at our path.
// Guarantee: Leave returns only after a listing with no participant node
// but perhaps its own, which it then deletes: every participant that had
// entered has left (deleted its node) or lost its session. Leave may be
// run again after a failure, also on a new session: our node is then gone
// and Leave only waits (DoubleClient.Leave does so across an expiry). If Leave
// ends early (deadline, cancel), a cleanup flow still deletes our node.
//
// # Operators
//
// What the recipe does when someone outside it (an operator with zkCli)
// deletes a participant's node, or deletes it and creates a node at the
// same path again:
//
//   - In Enter, a participant watches its own node as well as ready (one
//     more read per waiting participant; a deletion wakes only the node's
//     participant, no herd). Deleted, it no longer counts: Enter fails
//     with ErrParticipantLost, and the caller may Enter again (a new node,
//     counted anew). Without that watch it would wait for a ready node
//     that, one participant short, nobody makes.
//   - A node created again at a participant's path is listed under its
//     name and counted in its place, whoever owns it (the recipe cannot
//     tell it from a participant's node by its name): the participant
//     waits on, watching that node, and fails with ErrParticipantLost
//     only once it goes. Failing at once would have it enter again and
//     count twice. The same holds for a node found with our prefix after a
//     lost create reply (step 2). Such a node is never taken for ours
//     otherwise: no cleanup and no Leave deletes it.
//   - In Leave, a participant's node deleted by someone else counts as
//     left: every Leave goes on and returns. A node created again at a
//     participant's path is waited for like any participant's node, so
//     Leave returns only once it is gone (an operator's persistent node
//     there holds every Leave until someone deletes it).
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
// task.ErrSessionExpired, task.ErrClosed, ErrParticipantLost (Enter: the
// participant's node was deleted by someone else; enter again),
// task.ErrDataTooLarge (Set), or an *task.OpError of an operation that a
// retry cannot settle (task.ErrNoAuth, say).
//
// # Tests
//
// The simulations (sim_test.go) run the recipes over hundreds of seeds
// with fault plans drawn by fakezk/sim (connection drops with requests
// applied or not, short and long partitions, expiries, delays, server
// restarts, clock jumps, crashes and restarts of client processes,
// pauses, and an operator deleting participant nodes and creating them
// again), and with the replies of creates lost on top; operator_test.go
// drives the operator's cases directly.
// Canaries (internal/canary) switch known bugs back on, and each is caught
// (canary_test.go).
package barrier

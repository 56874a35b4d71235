// Package group is group membership on ZooKeeper: members register
// ephemeral nodes under a directory, and views follow the member list and
// report joins and leaves. It is the counterpart of Apache Curator's
// GroupMember and kazoo's Party.
//
// While a member has not left and its executor's session is connected,
// its node exists, or the member is creating it again: it stays
// registered across session expiries. After Leave succeeds, no node of
// this member is left by this executor (when Leave returns its ctx's
// error instead, the delete is still under way), and a Join that fails
// leaves no node. Every report of a view is a listing of the directory as the
// server had it at some moment after the previous report, and once the
// group stops changing and the session is connected the last report is
// the server's member list: the view converges after every fault.
// Changes between two listings are coalesced.
//
//	c, err := group.NewClient(ex, "/app/members")
//	me, err := c.Join(ctx, "host-1", []byte("10.0.0.1:8080")) // kept registered across expiries
//	defer c.Leave(ctx, me)
//	w, err := c.Watch(ctx)
//	if err != nil {
//		return err
//	}
//	defer w.Stop(ctx)
//	for ch, err := w.Next(ctx); err == nil; ch, err = w.Next(ctx) {
//		fmt.Println(ch.Members, ch.Added, ch.Removed) // who joined and left since the last Next
//	}
//
// Leave and Stop are started whatever their ctx, so the deferred calls
// above work also when ctx has ended: they return ctx's error at once and
// the node is deleted, or the view stopped, in the background.
//
// To compose with other tasks, use the task face: New returns a Group
// whose Join and Watch, the Member's Leave and the View's Stop, are
// task.Task values to run on an executor yourself (a View reports to a
// function on the executor goroutine); Client and Watcher run them and
// wait.
//
// Start reading at Group.Join and Member (member.go), then Group.Watch and
// View (view.go), then Client (client.go). The option WithACL sets the ACL
// of every node the group creates (task.OpenACL by default).
//
// # Retries
//
// Every operation is retried past connection loss (after the reconnect:
// the executor pauses while the session is suspended) and past "not
// sent".
//
// # Join
//
// A member is the ephemeral node DIR/<id> holding the member's data; the
// id is one path component.
//
//  1. create DIR/<id> (ephemeral, with the data). Success: registered.
//  2. ErrNoNode: create DIR and its ancestors (persistent), go to 1.
//     ErrNotSent: go to 1.
//  3. ErrConnectionLoss (the create may or may not have been applied) or
//     ErrNodeExists: exists DIR/<id> with a watch. Owned by our session:
//     the create was applied (its reply was lost), registered. No node: go
//     to 1. Owned by another session (another process with the same id,
//     or our own previous run whose session has not expired yet): wait for
//     the watch, then look again (step 3): the id is free once that node
//     goes.
//
// If Join ends early (deadline, cancel), a cleanup registered with
// Scope.Defer before the create runs as a flow of its own, not bound by
// the caller's deadline: it deletes DIR/<id> if its owner is the current
// session (with the version it read, so it never deletes a node that
// changed meanwhile). So a failed Join leaves no node.
//
// While the Member has not left, it keeps the node: a keeper flow watches
// DIR/<id> with exists and registers again (steps 1-3) if the node is gone
// or is not ours; after a session expiry (which takes the node) it starts
// again on the new session. Registered reports whether the node is known
// to exist on the current session. Leave stops the keeper, then deletes
// the node if the current session owns it (retrying past connection loss;
// a node already gone, or a session that ended, is success); if the
// caller's scope ends first the delete goes on as a flow of its own.
//
// Guarantee: while a Member has not left and its executor's session is
// connected, its node exists, or the keeper is creating it again; after
// Leave returns, no node of this member is left by this executor.
//
// # Watch
//
// A View follows DIR on one executor:
//
//  1. getChildren DIR with a watch. ErrNoNode: exists DIR with a watch;
//     if it is there now go to 1; else report an empty group and wait for
//     the exists watch, then go to 1.
//  2. if the listing differs from the last report (or nothing was reported
//     yet), report it: the members (sorted), and who was added and removed
//     since the last report.
//  3. wait for the watch; whatever the notification says, go to 1 (it is
//     only a hint: several changes may have happened, and a child watch
//     does not say which).
//  4. after a session expiry (which ends every watch) start again at 1 on
//     the new session. A watch lives on the server across a reconnect of
//     the same session, and a listing whose reply was lost is sent again,
//     so a connection loss needs nothing more.
//
// Guarantee: every report is a listing of DIR as the server had it at
// some moment after the previous report, reports are consistent with each
// other (the previous members plus Added minus Removed are Members), and
// once the group stops changing and the session is connected, the last
// report is the server's member list: the view converges after every
// fault. Changes between two listings are coalesced (a member that left
// and joined again in between may not be reported).
//
// The report function runs on the executor goroutine, once per change, in
// order, and must not block. Watcher (the blocking side) coalesces further:
// Next returns the difference since the previous Next.
//
// # Faults
//
// Crash and restart with the same identity: the dead process's node lives
// until the server expires its session, and views go on listing the
// member. The new process's Join finds that node owned by another session
// and waits for it to go (step 3), then registers on its own session; its
// Leave deletes only a node of its session, never the dead process's.
//
// An operator who deletes a member's node: the keeper's watch fires and
// the member registers again. A node created again at the path by hand
// (persistent, or another session's ephemeral) is not ours: the keeper
// waits for it to go, then registers (Registered is false meanwhile), and
// Leave leaves it alone. Views report names only, so such a node is
// reported as the member. A process paused past its session timeout loses
// its node with the session (other views report the member gone) and runs
// on believing it is registered until it hears of the expiry; then it
// registers again, and its views list again, on the new session.
//
// The group scenario (sim_test.go) takes all three classes, its operator
// deleting and re-creating member nodes, and judges the guarantees above:
// every report consistent with the one before, every view converging to
// the server's children, every member's node owned by its client's current
// session at the end, and no member node deleted by a client that is not
// leaving.
//
// # Errors
//
// Constructors and Join: task.ErrInvalidPath (an invalid directory or id),
// task.ErrInvalidArgument (a nil executor, report function or member),
// task.ErrDataTooLarge (data over the limit). Tasks: the scope's error
// (task.ErrDeadlineExceeded, task.ErrCanceled, matching the context
// errors), task.ErrSessionExpired or task.ErrClosed when the session ends
// before Join or Watch succeeds (the Client methods then run them again on
// the next session), or an *task.OpError of an operation that a retry
// cannot settle (task.ErrNoAuth, say); such an error in a keeper or
// follower ends the Member or View (Done, Err).
//
// # Tests
//
// The simulation (sim_test.go) runs members and views over hundreds of
// seeds with fault plans drawn by fakezk/sim (connection drops with
// requests applied or not, short and long partitions, expiries, delays,
// server restarts, clock jumps, and the classes of Faults above) and the
// replies of creates lost on top, and checks every report and the
// convergence of every view to the server's children. Canaries
// (internal/canary) switch known bugs back on, and each is caught
// (canary_test.go).
package group

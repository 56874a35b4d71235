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
// the node is deleted, or the view stopped, in the background. A
// background delete that fails for good goes to the executor's
// Config.OnError: log or count what it hears there (task.ErrClosed and
// task.ErrSessionExpired only say that the session ended, taking the
// node with it).
//
// To compose with other tasks, use the task face: New returns a Group
// whose Join and Watch, the Member's Leave and the View's Stop, are
// task.Task values to run on an executor yourself (a View reports to a
// function on the executor goroutine); Client and Watcher run them and
// wait.
// The option WithACL sets the ACL of every node the group creates
// (task.OpenACL by default).
//
// Every operation is retried past connection loss (after the reconnect)
// and past "not sent". Errors: constructors and Join refuse an invalid
// directory or id (task.ErrInvalidPath), a nil executor, report function,
// member or Watcher (task.ErrInvalidArgument), a nil ctx
// (executor.ErrNilContext) and data over the limit
// (task.ErrDataTooLarge). Tasks fail with the scope's error
// (task.ErrDeadlineExceeded, task.ErrCanceled, matching the context
// errors), task.ErrSessionExpired or task.ErrClosed when the session ends
// before Join or Watch succeeds (the Client methods then run them again on
// the next session), or an *task.OpError that a retry cannot settle
// (task.ErrNoAuth, say); such an error in a keeper or follower ends the
// Member or View (Done, Err). A watch another user of the session removes
// (RemoveWatches) is one more wake-up: a Join waiting for an id, a
// keeper and a view read again, watch again and go on.
//
// How a member joins and stays registered, how a view follows the
// directory, the fault table and the tests: recipes/group/PROTOCOL.md.
package group

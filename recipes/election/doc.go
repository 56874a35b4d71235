// Package election is leader election on ZooKeeper: Election
// (ephemeral-sequential candidates, each watching only the next lower
// one) and Master (the simpler "/master" pattern). It is the counterpart
// of Apache Curator's LeaderLatch and LeaderSelector (an Election's
// candidates are named as LeaderLatch names them, so the two campaign
// together on one directory) and of kazoo's Election. Both grant a
// Leadership: a handle with the candidate node, its session, a fencing
// token, a Done channel, fenced writes and Resign.
//
// Never two acting leaders, while every process runs in time: leadership
// is granted only to a candidate whose node is the lowest and whose
// ephemeral owner is the session the campaign runs on, it becomes
// uncertain at once when that session is disconnected, and it ends the
// GiveUp fraction (WithGiveUp) of the session timeout later (on the
// executor's clock) unless the connection returns first to the same
// session. A process paused past that margin may still act after the next
// leader is granted; then only fencing holds: writes made through Fenced
// name one leadership, not a path, and ZooKeeper itself refuses them once
// another leader may act, however late they arrive. Fencing tokens of successive leaders
// strictly increase, and a resign retried after a lost reply never
// deletes the next leader's node.
//
//	c, err := election.NewClient(ex, "/app/leader", election.WithData([]byte("host-1")))
//	l, err := c.Campaign(ctx) // waits until this candidate leads
//	if err != nil {
//		return err
//	}
//	defer c.Resign(ctx, l)
//	// Refused by ZooKeeper once another leader may act, however late it arrives.
//	_, err = c.Fenced(ctx, l, task.SetOp("/app/state", data, task.AnyVersion))
//	// ... lead; l.Done() is closed when the leadership ends (l.Err says why)
//
// Resign is started whatever its ctx, so the deferred Resign above works
// also when ctx ended while leading: it returns ctx's error at once and
// the node is deleted in the background (Done closes when the executor
// starts the resign, before the delete, not necessarily before Resign
// returns), as Lead does when it ends. Lead campaigns again after a transient failure,
// waiting longer after each (LeadOptions.Backoff), and returns an error
// that another campaign would meet again (task.ErrNoAuth, say). A
// background resign that fails for good goes to the executor's
// Config.OnError: log or count what it hears there (task.ErrClosed and
// task.ErrSessionExpired only say that the session ended, taking the
// node with it).
//
// NewMasterClient gives the same Client for a Master; Client.Observe
// follows who leads without campaigning, and Client.Lead campaigns again
// after each leadership (Curator's LeaderSelector). To compose with other
// tasks, use the task face: New (an Election) and NewMaster (a Master)
// have Campaign, Leader and Observe, and a Leadership has Resign and
// Fenced, all returning task.Task values to run on an executor yourself.
//
// WithACL sets the ACL of every node an election creates (task.OpenACL
// by default).
//
// # While leading
//
// When the session is disconnected the leadership is Uncertain at once
// (IsLeader false); on reconnect to the same session within GiveUp it
// leads again, after a read made since its last disconnect that finds its
// node still its own. It ends, closing Done, with Err wrapping ErrLost and
// the cause: ErrGaveUp after GiveUp, task.ErrSessionExpired or
// task.ErrClosed, the node deleted or changed by someone else, or a fenced
// write refused; ErrResigned after Resign. Once it has ended, Fenced
// refuses at once without sending.
// DefaultGiveUp is 1/4 of the session timeout: zkadapter notices a silent
// partition 2/3 of the timeout after the server last heard from it, and a
// GiveUp of 1/3 or more is safe only for disconnects the client hears of
// at once.
//
// # Callbacks and goroutines
//
// Tasks run on the executor goroutine. WithOnState's function runs there too, in
// order, once per change of state (Leading at the grant, Uncertain,
// Leading again, Ended); it must not block. The accessors of a Leadership
// (State, IsLeader, Err, Done, Token, Path, Session) are safe from any
// goroutine. The methods of Client are safe from any goroutine and need
// someone running the executor.
//
// The safety claim in full, fencing, both protocols, the fault table and
// the sequence counter's wrap-around: recipes/election/PROTOCOL.md.
package election

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
// uncertain at once when that session is disconnected, and it ends
// Config.GiveUp of the session timeout later (on the executor's clock)
// unless the connection returns first to the same session. A process
// paused past that margin may still act after the next leader is granted;
// then only fencing holds: writes made through Fenced name one leadership,
// not a path, and ZooKeeper itself refuses them once another leader may
// act, however late they arrive. Fencing tokens of successive leaders
// strictly increase, and a resign retried after a lost reply never
// deletes the next leader's node. Safety below states the claim in full.
//
//	c, err := election.NewClient(ex, "/app/leader", election.Config{Data: []byte("host-1")})
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
// the node is deleted in the background (Done closes at once), as Lead
// does when it ends. Lead campaigns again after a transient failure,
// waiting longer after each (LeadOptions.Backoff), and returns an error
// that another campaign would meet again (task.ErrNoAuth, say).
//
// NewMasterClient gives the same Client for a Master; Client.Observe
// follows who leads without campaigning, and Client.Lead campaigns again
// after each leadership (Curator's LeaderSelector). To compose with other
// tasks, use the task face: New (an Election) and NewMaster (a Master)
// have Campaign, Leader and Observe, and a Leadership has Resign and
// Fenced, all returning task.Task values to run on an executor yourself.
//
// Start reading at Election.Campaign (election.go), then Leadership
// (leadership.go), then Master (master.go) and Client (client.go).
// Config.ACL sets the ACL of every node an election creates (task.OpenACL
// by default).
//
// # Safety
//
// Never two acting leaders: a leader acts from the moment Campaign
// succeeds until Done is closed. Leadership is granted only to a candidate
// whose node is the lowest and whose ephemeral owner is the session the
// campaign runs on, still the executor's current one. When that session is
// suspended (disconnected) the leadership becomes Uncertain at once, and
// it ends (Done closed, Err wrapping ErrLost and ErrGaveUp) Config.GiveUp
// of the negotiated session timeout later, measured on the executor's
// clock, unless the connection returns first to the same session. The
// server cannot expire the session, and so delete the node and let another
// candidate lead, before a full timeout without hearing from the client.
// So as long as the client learns of the disconnect within (1 - GiveUp) of
// the timeout after the server last heard from it, the old leader has
// stopped before a new one starts.
//
// How soon the client learns of a disconnect is the client library's
// business. A refused or reset connection is noticed at once. A silent
// partition is noticed by go-zookeeper (zkadapter) when no reply arrived
// for 2/3 of the timeout (it pings every 1/3): hence DefaultGiveUp of 1/4,
// which leaves about 1/12 of the timeout (TestRealSilentPartition shows it
// against a real server). A GiveUp of 1/3 or more is safe only for
// disconnects the client hears of at once, or with a client library that
// notices silence sooner.
// Never two acting leaders holds while every process runs in time. A
// process paused past the margin (garbage collection, a stopped VM; in
// simulation a clock jump, which lets the server expire sessions before
// any client runs), or whose deliveries are late, may still act after the
// next leader is granted: no client-side rule prevents that, and then only
// fencing holds. The simulation judges exclusion outside such pauses, and
// fencing always. Writes that must never come from a former leader go
// through Leadership.Fenced, which ZooKeeper itself refuses once another
// leader may act, however late they arrive (see Fencing below).
//
// Fencing token: Leadership.Token is the candidate node's czxid. In one
// election directory a later leader's node was created later (sequence
// numbers follow creation) or, for a Master, created after the former
// master node was deleted: tokens of successive leaders strictly increase.
//
// # Fencing
//
// A fence must name one leadership, not a path: a node deleted and
// created again at the same path starts again at version 0.
//
//   - Election: Fenced checks the candidate node at the version it was
//     created with. Its name is unique to the campaign (a prefix drawn for
//     the attempt, and the directory's sequence number), so once it is
//     deleted no later node has its path: the check fails for good.
//   - Master: the master node's path is fixed, so Fenced checks the
//     master's lease: an ephemeral node PATH+LeasesSuffix+"/"+<campaign
//     id>, created in the multi that creates the master node. That multi
//     also deletes every lease in the directory, so once anyone else has
//     become master the former master's lease is gone and its check fails
//     for good, whether its node went by expiry, by Resign or by an
//     operator's delete, and whoever created the master node again. A
//     lease deleted by hand fails the current master's fenced writes (the
//     safe direction) and its next write or recheck ends its leadership.
//
// What a fence does not see, said plainly: a node created by hand under
// the exact name of a deleted candidate node or lease (a name with a
// random 128-bit part) passes for it; and an operator who deletes a
// Master's node and creates one by hand outside the recipe makes no new
// master, so the old master's fence still passes (no two leaders act: the
// operator's node leads nothing).
//
// Deletes follow the same rule. A delete retried after a lost reply never
// goes by version alone: Resign and the cleanups delete a candidate node
// only after reading that it is still our incarnation (czxid and owner),
// and a Master's node with a multi that checks its lease, which any later
// master has deleted (zkops.DeleteNode, deleteMaster). So a former
// leader's late delete never removes the node of the leader after it.
//
// # Faults
//
// Crash and restart with the same identity: the dead process's session
// lives until the server expires it, and its node with it; the new
// process campaigns on a new session and waits behind that node like any
// candidate (the owner and czxid checks tell the two apart even when they
// draw the same candidate names from the same executor seed). An operator
// who deletes a leader's node ends that leadership (the node watch), and
// the next candidate leads; the former leader's fenced writes are refused
// as above. A process paused past its session timeout resumes believing it
// leads until its events arrive: its fenced writes are refused, its
// unfenced actions are not (no library can stop those).
//
// # Election protocol
//
//  1. Draw a 128-bit id from the executor's seeded source (Scope.Rand):
//     deterministic in simulation, random in production.
//  2. Create DIR/_c_<id>-latch- (ephemeral-sequential, data Config.Data);
//     the server appends a 10-digit sequence number. The names follow
//     Apache Curator's LeaderLatch in protected mode (which orders by the
//     digits after the last "latch-"), so the two queue together on one
//     directory and never lead at once (TestCuratorLeaderLatchInterop runs
//     Curator 5.4's LeaderLatch and this election on one directory of a
//     real server, each leader creating a marker node the other side
//     would find). Children whose names do not end in "latch-<digits>"
//     are ignored. ErrNoNode: create DIR and its
//     ancestors (persistent), then create again. ErrNotSent: create again.
//  3. ErrConnectionLoss (the reply was lost; the create may or may not
//     have been applied): after the reconnect, list DIR and read (exists)
//     every child named with our prefix; one whose ephemeral owner is our
//     session is our node. None: the create was not applied; go to 2.
//  4. List DIR without a watch and sort the candidates by sequence. Our
//     node missing: fail with ErrLost (someone deleted it). Ours the
//     lowest: go to step 6. Otherwise step 5.
//  5. Exists with a watch on the next lower candidate only (no herd: one
//     deletion wakes one waiter). Gone already, or when its watch fires:
//     go to 4.
//  6. Read our node (exists): it must exist and its ephemeral owner must
//     be the session the campaign runs on, still current. Otherwise fail
//     with ErrLost. If the connection was suspended between sending this
//     read and acting on its reply (the reply's continuation waits in the
//     paused task queue until the reconnect, however long that took), go
//     to 4: a grant never rests on a read older than the last suspension.
//     Then leadership is granted: Campaign succeeds.
//
// Reads and lists are retried past connection loss (the retry waits for
// the reconnect). Session expiry fails the campaign with
// task.ErrSessionExpired (the node went with the session); run Campaign
// again on the next session. On any failure, deadline or cancel of the
// campaign, a cleanup flow of its own (Scope.Defer, not bound by the
// caller's deadline, retrying past connection loss) deletes the node, or
// if its name is unknown (step 3 did not finish) every child with our
// prefix owned by our session. No orphan candidate node is left.
//
// # Master protocol
//
//  0. Draw a 128-bit campaign id from the executor's seeded source; our
//     lease will be LEASES/<id>, LEASES being PATH+LeasesSuffix.
//  1. List LEASES, then one multi: delete every lease listed, create PATH
//     (ephemeral, data Config.Data) and create our lease (ephemeral). Both
//     nodes are made in one transaction, so they share a czxid. Success: go
//     to 4. A listed lease already gone (its session ended): go to 1.
//     ErrNoNode (the parent or LEASES is missing): create them
//     (persistent), go to 1.
//  2. ErrNodeExists, ErrConnectionLoss or ErrNotSent: exists with a watch
//     on PATH. Gone: go to 1. Owned by our session: read our lease; if it
//     is our session's with PATH's czxid, our multi made the node (a reply
//     that was lost): go to 4. If our create's outcome was unknown and the
//     lease does not vouch for the node (someone removed or replaced it),
//     delete the node (that incarnation only) and go to 1: nobody else
//     could tell it is ours. Anyone else's (another campaign's, even on our
//     session): wait for the watch, then go to 1. Every waiter is woken by
//     the master's deletion (a herd bounded by the number of candidates;
//     use Election for many candidates).
//  3. Failure, deadline or cancel: a cleanup deletes PATH if step 2's test
//     says our multi made it, with the multi of Resign below, and our lease.
//  4. Read PATH and our lease: they must be what our multi made (one
//     czxid, our session, still current), read after the last suspension
//     (as in step 6 of the election; so must step 2's reads); then
//     leadership is granted. PATH ours but the lease not vouching for it:
//     delete PATH (that incarnation) and go to 1. Otherwise go to 2.
//
// A Master's Resign, and its delete after giving up, send one multi: a
// check of our lease at version 0, a delete of PATH and of our lease. It
// is retried as it is after a lost reply: if the first was applied, the
// retry finds the lease gone and deletes nothing; a later master's node
// is never deleted, since that master's multi deleted our lease. A lease
// gone while PATH is still ours falls back to deleting PATH only if it is
// still our incarnation (czxid and owner).
//
// # While leading
//
// The Leadership follows its session (Scope.Subscribe) and watches its
// node (exists with a watch, re-armed after each event).
//
//   - Suspended: state Uncertain at once (IsLeader false, OnState called);
//     a timer of GiveUp x the negotiated timeout starts on the executor's
//     clock. It fires from the executor's event queue, so also while the
//     session is suspended. The timer is armed at every suspension.
//   - Connected, same session, before the timer: the timer stops; an
//     exists read (sent after the reconnect, so it sees what happened
//     meanwhile) must find our node owned by our session, then the state is
//     Leading again. A node gone: ErrLost.
//   - Timer fired: leadership ends with ErrLost wrapping ErrGaveUp. The
//     session may live on, so a flow deletes the node once the session is
//     back (if it is not, the node goes with the session): the next
//     candidate need not wait for an expiry.
//   - Connected with a new session, or Expired: ErrLost wrapping
//     task.ErrSessionExpired. Closed: ErrLost wrapping task.ErrClosed.
//   - The node deleted or changed by someone else, or a fenced write
//     refused: ErrLost. As after giving up, a flow then deletes our node if
//     it is still our incarnation, so that nobody (our own next campaign
//     included) waits behind it until the session ends.
//   - Resign: Err is ErrResigned and Done is closed at once, then the node
//     is deleted (retried past connection loss; if the caller's deadline
//     passes the delete goes on as a flow of its own; a session that ended
//     took the node with it). Idempotent.
//
// Fenced(ops...) sends one multi: a check (of our candidate node at the
// version it was created with; for a Master, of our lease), then ops. A refused check fails with ErrLost wrapping
// the server's error and ends the leadership. Once leadership is known to
// have ended, Fenced refuses at once without sending.
//
// # Watching who leads
//
// Observe (Election.Observe, Master.Observe; the blocking Observe returns
// a channel) follows who leads without campaigning, as etcd's Observe
// does: the lowest candidate node of an election, the master node of a
// Master, with its data, token (czxid) and session, at the start and at
// each change, read from consistent snapshots (recipes/cache) across
// reconnects and session expiries. What an observer sees is the
// directory: a candidate that has become the lowest but not yet checked
// its node, or that has given up leading and not yet deleted it, is shown
// as the leader; the Leadership's own state is what a leader acts on.
//
// # Leading in a loop
//
// Lead campaigns, runs the caller's function with a context canceled when
// the leadership ends, resigns when it returns and, with
// LeadOptions.Requeue, campaigns again (Curator's LeaderSelector with
// autoRequeue). The function must return soon after its context is
// canceled; its writes should be fenced.
//
// # Callbacks and goroutines
//
// Tasks run on the executor goroutine. Config.OnState runs there too, in
// order, once per change of state (Leading at the grant, Uncertain,
// Leading again, Ended); it must not block. The accessors of a Leadership
// (State, IsLeader, Err, Done, Token, Path, Session) are safe from any
// goroutine. The methods of Client (client.go) are safe from any
// goroutine and need someone running the executor.
//
// # Sequence wrap-around
//
// The sequence number of a directory runs out after 2^31-1 creates (the
// parent's cversion, a Java int; see zkops.Exhausted for what the server
// does then). As in the lock recipe: a candidate whose number is
// exhausted (2147483647, or negative once wrapped) never queues; it
// deletes its node, waits until the directory is empty, deletes it and
// campaigns again in the directory created afresh, its counter at zero;
// candidates queued below the maximum are served first, in order. A
// sequential create that clashes with an earlier name (the counter stuck
// at its maximum) waits for the reset the same way. A leader numbered
// within 2^20 of the end deletes the directory on Resign when it is then
// empty, so an election that is idle now and then restarts its counter
// long before it runs out. Fencing tokens are czxids, so they keep
// growing across a reset. Tested on fakezk with the counter started near
// its end (wrap_test.go, TestSeededElectionAcrossWrap; the canary
// election/queue-exhausted-sequence, a candidate queueing with an
// exhausted number, is caught there at the first seed); a real server's
// counter cannot be set, so the wrap is not exercised there.
package election

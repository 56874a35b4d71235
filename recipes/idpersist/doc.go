// Package idpersist is the reserved-ID persistence service: it keeps a
// durable high-water mark for a sequence of IDs (recipes/seqid's node
// format) so that, after every ZooKeeper server loses its data, IDs resume
// above every ID ever handed out and none repeats. Neither Curator nor
// kazoo has a counterpart.
//
// The durable mark is always at or above every ID any generator has
// handed out: a leader among the replicas makes each new limit durable
// (fsync and atomic rename, for a FileStore) before it writes the limit
// node, and generators never take an ID above the limit node's value.
// After every server loses its data, IDs resume above the mark.
//
//	store, err := idpersist.NewFileStore("/var/lib/app/ids.mark") // shared by every replica
//	cfg := idpersist.Config{Sequence: "/app/ids", Limit: "/app/ids.limit", Election: "/app/ids.replicas", Store: store}
//	replica, err := idpersist.NewReplica(cfg)
//	go replica.Serve(ctx, ex) // one replica leads: it raises the limit, durable first
//	ids, err := idpersist.NewClient(ex, cfg)
//	id, err := ids.Next(ctx) // waits while no limit is above the sequence
//
// To compose with other tasks, use the task face: Next, Reserve and
// Replica.Run return task.Task values to run on an executor yourself;
// Client and Replica.Serve run them and wait.
//
// Start reading at Reserve/Next (client.go), then Replica (leader.go);
// the durable mark is a Store (store.go), by default a FileStore.
// Config.ACL sets the ACL of every node a replica creates (task.OpenACL by
// default).
//
// # The safety property
//
// The mark holds because IDs are handed out only up to a limit that
// was made durable before any generator could see it:
//
//	every ID handed out <= some value of the limit node <= durable mark
//
// The leader stores a new limit in the Store (and Store returns only once
// it is durable) before it writes the limit node; generators never take
// an ID above the limit node's value. The mark never goes down.
//
// Persisting "when value % 100 == 0, from a watch" is not safe and is not
// what this package does: watches are one-time triggers, so several
// increments can happen between two notifications and a multiple of 100 is
// missed. Here the watch only wakes the leader, which reads both nodes
// again after every notification and after every connection loss; the
// generators are stopped at the limit, whether or not the leader saw them
// come near it.
//
// # Nodes
//
//	Config.Sequence  the sequence: 8-byte big-endian long, the largest ID
//	                 reserved (as seqid, so seqid.Decode/Hex apply)
//	Config.Limit     the reserved limit, same format: no ID above it is
//	                 handed out; only the leader writes it
//	Config.Election  parent of the candidates, ephemeral-sequential nodes
//	                 "c-<session id>-<random>-<10-digit sequence>"
//
// # Client (Reserve, Next, Client)
//
// One round: get the limit L; get the sequence (value v, version ver). If
// ver is -1 it fails with seqid.ErrVersionWrapped. If v >= L it reads the
// limit again with a watch and, unless it has risen, waits for the watch,
// then starts over. Otherwise it sets the sequence to v+k (k = min(n,
// L-v)) expecting ver, and hands out v+1..v+k. A missing node (no leader
// yet, or a data loss not yet repaired) is waited for with an exists
// watch: the generator never creates the sequence. BadVersion, NoNode,
// connection loss and not sent start the round over (after connection
// loss an applied write's IDs are skipped, never repeated). Session expiry
// ends the task; Client.Next runs it again on the next session.
//
// Limits only rise, and every value ever written to the limit node is at
// or below the mark, so a stale read of the limit is safe.
//
// # Leader election (Replica)
//
// Each replica creates an ephemeral-sequential candidate under Election
// (after connection loss on the create, it finds its node by the unique
// prefix instead of creating a second one). It lists the candidates,
// sorted by sequence number: if it is not the lowest it sets an exists
// watch on the next lower candidate only (no herd) and, when that watch
// fires or the node is already gone, lists again. If it is the lowest it
// checks that its node's ephemeralOwner is its current session id; only
// then does it lead. Its node gone means ErrDeposed: Replica.Serve creates a
// new candidate.
//
// While leading, any session event other than Connected (Suspended,
// Expired, Closed) cancels the leader's work at once; after a suspension
// the replica checks again that it is the lowest candidate of its session
// before leading again; after expiry Replica.Serve runs for election again
// with a new node on the new session. Every leader write is a multi whose
// first op checks the leader's own candidate node (version 0), so a
// deposed leader's writes fail. The check names one leadership, not a
// path that any leader could hold: the candidate's name carries its
// session id, a random draw and the directory's sequence number, so once
// it is deleted (expiry, an operator) no later candidate has its path,
// and the check fails however late the write arrives.
//
// # Leader round
//
// On becoming leader it loads the mark M from the Store. Each round:
//
//  1. get the limit L with a watch (missing: none). If L > M (a store that
//     lags behind), store L first.
//  2. get the sequence v with a watch. Missing (total data loss, or first
//     start): create it holding max(M, L), fenced, and start the round
//     again. This restores the sequence before any generator can proceed
//     (generators wait for both nodes).
//  3. If the limit exists and v + LowWater <= L: wait until either watch
//     fires, then go to 1.
//  4. Otherwise newLimit = max(v, L) + Chunk. If newLimit > M: Store it
//     (durable) and M = newLimit. Only then write the limit node (create
//     it, or set it expecting the version read in 1), fenced.
//
// Connection loss, not sent, BadVersion, NodeExists and NoNode start the
// round again from 1. A leader killed between 4's Store and its write
// leaves the mark above the limit: harmless, the next leader starts from
// the nodes and the shared Store.
//
// # Many sequences (Config.Parent)
//
// With Parent set, the leader serves every child of Parent as a sequence
// and picks up children added or removed while it leads, with no restart.
// The limit of Parent/<name> is Limits/<name>; its mark is the Store
// Stores.Mark(name) (DirStores: one FileStore per name in a directory).
// Generators use cfg.Named(name) with Reserve, Next and NewClient.
//
// The leader lists Parent with a children watch; each listing:
//
//  1. Every child not yet served gets a flow of its own: the name is
//     registered live in Stores (durable), its mark loaded, then the
//     leader rounds above run for it, each with its own mark and limit.
//     A name that was not live (new, or added again after removal) whose
//     node holds less than its kept mark is first raised to the mark,
//     fenced, before its limit node exists, so a name reused after removal
//     never repeats an ID of its earlier life.
//  2. A served name no longer listed: its flow stops. (A flow that itself
//     sees the node gone while its limit node remains stops too.)
//  3. Every live name with no node: if its limit node exists, the
//     sequence was removed: the limit node is deleted (fenced), then the
//     name is retired in Stores (its mark is kept). With neither node,
//     ZooKeeper lost its data: the name is served, which restores the
//     sequence from its mark before any generator proceeds.
//  4. Wait for the children watch, then list again.
//
// A removed sequence is no longer served: its limit node is gone, so its
// generators wait. A leader that stops between deleting a limit node and
// retiring the name leaves a live name with neither node; the next leader
// restores it (a removed sequence comes back, holding its mark; no ID
// repeats). A failure of one sequence's flow (Store error, bad data, lost
// leadership) ends the leader's turn.
//
// # Faults
//
// Crash and restart with the same identity: the dead replica's candidate
// lives until its session expires; the new replica's candidate carries its
// new session's id (no name repeats, even with the same executor seed) and
// leads only when it is the lowest and owned by its session. A replica
// whose flow its caller ends (a deadline, a cancel) while its session
// lives on withdraws its candidate as it ends, so the others need not wait
// for that session to end (TestStoppedReplicaWithdrawsCandidate).
//
// An operator who deletes the leader's candidate deposes it, and the next
// candidate leads. The deposed leader does not watch its own node: it
// hears of the delete when a fenced write is refused (ErrDeposed) or when
// it checks its place after a suspension; until then Leading stays true. A
// candidate created again by hand under its name passes the fence (version
// 0 of that path), so its former leader may write beside the next one. A
// leader paused past its session timeout runs on until it hears of the
// expiry: its fenced writes are refused, and a mark it stores never lowers
// the Store's (raiseMark reads it first).
//
// What holds is the safety property, by order (durable, then visible) and
// version checks, not by the fence alone: leaders writing at once write
// only limits each made durable, over versions each read. The idpersist
// scenario (explore_test.go) takes all three classes and Wipe; its
// operator touches only candidates (losing the sequence or the limit is a
// data loss, survived only when every session ends with it: a wipe). It
// judges: no ID handed out twice, draws linearizable, every ID at or below
// the durable mark, the mark never going down.
//
// # Requirements and limits
//
// All replicas must share one Store: the mark of a replica that never
// led would not cover the IDs of another's limits. Clients that draw from
// the sequence without the limit (seqid.Next, the legacy services) break
// the property: they may pass the limit, and after a data loss seqid.Next
// would recreate the sequence at 0 if it ran before the leader. Across a
// data loss the protocol relies on every session ending (a wipe expires
// them), so no round begun before the loss writes after it.
//
// # Goroutines
//
// Reserve, Next and Replica.Run return tasks for an executor. Store.Store
// runs on the executor goroutine (it blocks it for an fsync, once per
// Chunk IDs). Client, Replica.Serve and the stores are safe to use from
// any goroutine.
package idpersist

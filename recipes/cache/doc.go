// Package cache keeps local copies of ZooKeeper nodes up to date with
// watches: a NodeCache follows one node, a ChildrenCache a directory's
// children (with their data if asked), a TreeCache a node and everything
// under it. They are the counterparts of Apache Curator's NodeCache,
// PathChildrenCache and TreeCache, and of kazoo's TreeCache.
//
// A cache re-arms its watches after every notification and connection
// loss and reads everything again after a session expiry. It reports what
// was added, removed, changed and re-created, tells a node deleted and
// created again from a node that merely changed (by czxid, not by
// version), and converges to the server's state after every fault: after
// the last write to the followed nodes and once faults stop, it holds
// exactly the server's nodes (paths, Stats, data). Next returns the
// difference between two consistent snapshots.
//
//	tree, err := cache.StartTree(ctx, ex, "/app/services", cache.Options{Data: true}) // returns once the first snapshot is read
//	if err != nil {
//		return err
//	}
//	defer tree.Stop(ctx)
//	for ch, err := tree.Next(ctx); err == nil; ch, err = tree.Next(ctx) {
//		for _, n := range ch.Recreated { // deleted and created again since the last Next
//			fmt.Println(n.Path, n.Stat.Czxid)
//		}
//	}
//
// Stop is started whatever its ctx, so the deferred Stop above stops the
// cache also when the loop ended with ctx (Stop then returns ctx's error
// and the cache stops in the background).
//
// To compose with other tasks, use the task face: NewNode, NewChildren
// and NewTree return caches whose Start, Next and Stop are task.Task
// values to run on an executor yourself; StartNode, StartChildren and
// StartTree return a Client that runs them and waits.
//
// # Protocol
//
// A cache runs one flow per session, the follower, which keeps two kinds
// of work: the directory must be listed (ChildrenCache), and a set of
// nodes must be read. It does one read at a time, in path order, until
// nothing is left:
//
//  1. List the directory with a child watch (getChildren with watch).
//     Cached children missing from the listing are Removed; listed names
//     not cached are marked to be read. When the watch fires, the
//     directory is marked to be listed again. A missing directory is
//     watched with exists until it is created; its cached children are
//     Removed.
//  2. Read each marked node with a data watch (getData with watch) and
//     compare it with the cached one: not cached is Added; another czxid
//     is Recreated (the node was deleted and created again between the two
//     reads, whatever its version says); another mzxid or version is
//     Changed. When the watch fires (data changed, node deleted) the node
//     is marked to be read again. A child found missing is Removed (the
//     directory's watch tells when it comes back); the followed node of a
//     NodeCache found missing is Removed and watched with exists until it
//     is created.
//  3. A TreeCache does both at every level: the root is read as a
//     NodeCache's node, and every node read for the first time (or found
//     re-created) is also listed as a ChildrenCache's directory. A node
//     removed takes its cached subtree with it (each node Removed).
//  4. When nothing is marked, the cache is quiescent: it calls OnSynced,
//     resumes Start the first time, and answers a waiting Next.
//
// # One recursive watch (Options.Recursive)
//
// A TreeCache with Options.Recursive follows its subtree with one
// persistent-recursive watch on the root (ZooKeeper 3.6+; Curator's
// CuratorCache does the same) and reads without watches: it sets the
// watch, walks the subtree (reads each node, lists each node it reads for
// the first time), then reads each node an event of the watch names. A
// reconnect of the same session sets the watch again, but the server sends
// no event for what changed while the session was away, so the cache
// walks the whole subtree again then: it lists every node, and reads again
// only those whose listing shows another czxid or mzxid; an expiry starts
// over on the new session the same way. The guarantees below hold in both modes (the simulation runs
// both). Stop removes the watch with RemoveWatches of type Any, which
// takes every watch of the session on the root path (ZooKeeper 3.8 cannot
// remove one alone); another recursive cache of the root on the session
// then sets its watch again and walks.
//
// On ZooKeeper 3.8 a one-time watch on the root path set by the same
// session (another cache of the root, an ExistsW or GetW of your own)
// takes the recursive watch's registration off the server, and the cache
// hears nothing more until a reconnect (task.AddWatch explains why): run a
// recursive cache on a session that sets no other watch on its root.
//
// The cost, measured on fakezk on a tree of 1,000 nodes with a stream of
// changes in turn a leaf's data, a leaf created, a leaf deleted
// (BenchmarkTreeCache; go test -run '^$' -bench BenchmarkTreeCache
// -benchtime 3000x ./recipes/cache):
//
//	                       default  recursive
//	watches to start          2000          1
//	requests to start         2000       2002
//	requests per change          2          1
//	watches per change           2          0
//	requests per reconnect       0       1000
//
// On a real ZooKeeper 3.8.0 server on loopback (BenchmarkRealTreeCache:
// ZK_REQUIRED=1 go test -run '^$' -bench BenchmarkRealTreeCache
// -benchtime 3000x -count 2 ./recipes/cache; 2 cores, load average 9 to
// 12), the same counts, and from a change's reply to the writer until the
// cache shows it: 2.1 to 2.6 ms in the default mode, 0.97 to 1.0 ms in the
// recursive one (the default mode reads one request at a time, and a
// created node costs it three: the parent's listing, the node's read and
// its listing).
//
// So the recursive mode holds one watch instead of two per node on the
// server and in the client, and reads once per change; it pays a listing
// of every node on every reconnect, where the default mode's watches are
// set again by the connection (SetWatches, with no request of the cache).
//
// # Why a quiescent cache is consistent
//
// A watch is a one-time trigger, so every read that could miss a change
// sets the watch that reports the next one; and since ZooKeeper delivers a
// session's notifications before any reply of a later change, a
// quiescent cache, whose every watch is set and none has fired, is a
// consistent snapshot: every node as of the instant of the last reply.
// Next and OnSynced only ever show such snapshots; OnEvent shows each
// change as it is read.
//
// # Errors
//
//   - Connection loss or not sent on a read: the read is tried again after
//     the reconnect (a failed call sets no watch, so it must be). Watches
//     already set survive a reconnect of the same session.
//   - Session expiry: every watch is gone. The follower of the old session
//     ends; on the new session a new follower lists the directory and reads
//     every cached node again, so changes made meanwhile, including
//     deletes and re-creations, are reported.
//   - The executor closed: the cache ends with task.ErrClosed.
//   - Any other error (no auth, ...): the cache ends with it (Err, Done);
//     waiting Nexts fail with it.
//
// # Faults
//
// A cache owns no node and writes nothing, so the process and operator
// faults reach it as they reach any reader.
//
//   - Crash and restart: the dead process's caches and watches go with it
//     (its session's watches end with the session); the new process builds
//     its caches afresh on its new session, and they report every node as
//     Added.
//   - An operator's delete or re-creation is a change like any other:
//     Removed (then Added), or Recreated if the node was created again
//     before the cache read it again, however alike the new node is (data
//     and version included: the czxid tells). A ChildrenCache's deleted
//     directory or a NodeCache's deleted node is watched with exists until
//     it is created again; a node created as another session's ephemeral
//     is Removed when that session ends.
//   - A process paused past its session timeout runs on showing what it
//     showed before the pause until it hears of the expiry; then, on the
//     new session, it reads everything again and reports what changed
//     meanwhile, deletes and re-creations included.
//
// The cache scenario (sim_test.go) takes all three classes, its operator
// deleting and re-creating any node under /cache (the followed directory
// and node included), and judges every OnEvent and every Next against the
// ones before, and the caches, their event streams and their last
// snapshots against the server's nodes once the faults stop.
//
// # Guarantees
//
// OnEvent and OnSynced run on the executor goroutine, in order, once per
// change and once per snapshot; they must not block. After the last write
// to the followed nodes and once faults stop, the cache holds exactly the
// server's nodes (paths, Stats, data). Next coalesces: it returns the
// difference between two consistent snapshots, so a slow reader never
// holds up the executor and nothing is queued without bound.
//
// Memory: a stopped cache leaves nothing under its session, so a session
// that starts and stops caches for ever stays flat (memory_test.go runs
// 100,000 Start/Stop cycles of each kind). What ZooKeeper gives no way to
// withdraw stays until it fires: the watches a cache had pending when it
// stopped, on the server and in the client library (a channel per watching
// call in go-zookeeper), each holding its small callback. A cache started
// and stopped many times on nodes that never change grows those.
//
// Start with NewNode, NewChildren or NewTree in a task chain, or with
// StartNode, StartChildren and StartTree for the blocking API.
package cache

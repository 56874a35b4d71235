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
// exactly the server's nodes: their paths, their data and their Stats (a
// TreeCache every Stat field but Aversion, the other caches the fields
// their data watches follow: see Stat fields below). Next returns the
// difference between two consistent snapshots.
//
//	tree, err := cache.NewTreeClient(ex, "/app/services", cache.WithData())
//	if err != nil {
//		return err
//	}
//	if err := tree.Start(ctx); err != nil { // returns once the first snapshot is read
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
// and the cache stops in the background; a failure there goes to the
// executor's Config.OnError, to log or count).
//
// To compose with other tasks, use the task face: NewNode, NewChildren
// and NewTree return caches whose Start, Next and Stop are task.Task
// values to run on an executor yourself; NewNodeClient, NewChildrenClient
// and NewTreeClient return a Client that runs them and waits.
//
// The functions of WithOnEvent and WithOnSynced run on the executor
// goroutine, in order, once per change and once per snapshot; they must
// not block. Next coalesces: it returns the difference between two
// consistent snapshots, so a slow reader never holds up the executor and
// nothing is queued without bound.
// WithRecursive makes a TreeCache follow its tree with one persistent
// recursive watch (ZooKeeper 3.6 and later; Curator's CuratorCache)
// instead of one watch per node.
//
// # Stat fields
//
// A TreeCache keeps each node's whole Stat but Aversion. A NodeCache's
// node and a ChildrenCache's children are followed by data watches only,
// which a child's creation or deletion does not fire: their Cversion,
// NumChildren and Pzxid are as of their last read. Aversion is as of a
// node's last read or listing in every cache: ZooKeeper fires no watch on
// setACL.
//
// Nodes the session may not read are outside these promises: ZooKeeper
// does not tell a session of a change to a node it may not READ, so a
// recursive TreeCache misses such a node created under a followed one,
// and a NodeCache misses its node created again with such an ACL (the
// default mode, which lists and reads, ends with task.ErrNoAuth
// instead). Once an operator gives the READ back, the cache has caught
// up, or ended with task.ErrNoAuth, by its watches' next re-read
// (executor.Config.WatchRecheck: twice the session timeout; a re-read
// due while the session is suspended is made a period later); a recursive
// TreeCache, whose one watch has no such re-read, reads its nodes again
// with exists itself every such period (one exists per node; none when
// WatchRecheck turns the re-reads off), so that a node deleted or
// written while the session could not read it is seen then too.
//
// # Errors
//
// Connection loss is retried after the reconnect, and watches already set
// survive it. On session expiry every watch is gone: on the new session
// the cache reads everything again, so changes made meanwhile, deletes and
// re-creations included, are reported (a Client's Next waiting meanwhile
// waits on for them). The executor closed ends the cache
// with task.ErrClosed; any other error (no auth, ...) ends it with that
// error (Err, Done), and waiting Nexts fail with it.
//
// A stopped cache leaves nothing under its session, but ZooKeeper gives
// no way to withdraw a watch: those a cache had pending when it stopped
// stay, on the server and in the client library, until they fire.
//
// The protocol, the recursive mode, why a quiescent cache is consistent,
// the fault table and the memory bounds: recipes/cache/PROTOCOL.md.
package cache

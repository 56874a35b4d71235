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
// After every server loses its data, IDs resume above the mark; a
// sequence node deleted and created again lower (an operator resetting
// it) is raised above the mark before any generator takes from it, as
// long as the leader is the first to write it: an operator who also
// sets the new node's value lets a generator's write read from the old
// node land on it (PROTOCOL.md).
//
//	store, err := idpersist.NewFileStore("/var/lib/app/ids.mark") // shared by every replica
//	cfg := idpersist.Config{Sequence: "/app/ids", Limit: "/app/ids.limit", Election: "/app/ids.replicas", Store: store}
//	replica, err := idpersist.NewReplica(cfg)
//	go replica.Serve(ctx, ex) // one replica leads: it raises the limit, durable first
//	ids, err := idpersist.NewClient(ex, cfg)
//	id, err := ids.Next(ctx) // waits while no limit is above the sequence
//
// A generator waits on a watch of the limit node (or of a missing node),
// a candidate on the next lower candidate, a leader on the sequence and
// the limit: a watch another user of the session removes (RemoveWatches)
// is one more wake-up, which reads again, never the end of the wait.
//
// To compose with other tasks, use the task face: Next, Reserve and
// Replica.Run return task.Task values to run on an executor yourself;
// Client and Replica.Serve run them and wait.
// The durable mark is a Store, by default a FileStore. Config.ACL sets
// the ACL of every node a replica creates (task.OpenACL by default).
// Unlike the other recipes, whose constructors take one path and
// options, idpersist takes a Config: a sequence is several nodes
// (Sequence, Limit, Election; or Parent and Limits for many sequences)
// and a durable Store, none of which is the one natural path.
//
// # Requirements
//
// All replicas must share one Store: the mark of a replica that never
// led would not cover the IDs of another's limits. Clients that draw from
// the sequence without the limit (seqid.Next, the legacy services) break
// the property: they may pass the limit, and after a data loss seqid.Next
// would recreate the sequence at 0 if it ran before the leader. A version
// of the sequence node wrapped to -1 fails with seqid.ErrVersionWrapped.
//
// # Goroutines
//
// Reserve, Next and Replica.Run return tasks for an executor. Store.Store
// runs on the executor goroutine (it blocks it for an fsync, once per
// Chunk IDs). Client, Replica.Serve and the stores are safe to use from
// any goroutine.
//
// The safety property and its argument, the nodes, the protocols of the
// client and the leader, many sequences under one parent (Config.Parent)
// and the fault table: recipes/idpersist/PROTOCOL.md.
package idpersist

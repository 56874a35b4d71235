// Package partition divides a set of items (queues, shards, tenants)
// among the live members of a group and moves them when members come and
// go: the work partitioning of kazoo's SetPartitioner, on its node layout,
// so that kazoo and Go members can share one set.
//
// Guarantee. At any instant at most one member holds an item: a hold is
// a lock node, the lowest of the item's lock directory, and carries a
// fencing token (Hold.Token, the node's creation zxid, strictly
// increasing from one holder of an item to the next). Writes made through
// Hold.Fenced are applied only while the hold's node exists and the
// member has not given the hold up, so the late writes of a member that
// lost or released an item are refused (paused past its session,
// expired, its node deleted, the item moved); for a store
// outside ZooKeeper, pass Token to recipes/fence. Once the party has been
// unchanged for the Stable wait (WithStable) and the members are
// connected, each member takes its share (KazooAssign, kazoo's division,
// by default) within Stable, the old holders' Drain (for a holder whose
// process died: until the server expires its session) and a few round
// trips, so every item is held; a member that leaves gives its items up
// (after its WithDrain task), one that expires loses them with its
// session, and the others take them once the party shows it gone. A member stays in the party across session expiries.
// A watch another user of the session removes (RemoveWatches) is one
// more wake-up: the member reads again, and nothing it holds or tries ends.
//
//	c, err := partition.NewClient(ex, "/app/queues", queues)
//	m, err := c.Join(ctx, "worker-1", nil) // nil: no callback, poll with Wait
//	defer c.Leave(ctx, m)
//	held, err := c.Wait(ctx, m) // kazoo's wait_for_acquire
//	for _, h := range held {
//		// Applied only while hold h stands (not under a later hold).
//		_, err = c.FencedHold(ctx, m, h, task.SetOp("/app/data/"+h.Item, data, task.AnyVersion))
//	}
//
// kazoo's states are here as State (Allocating, Acquired, Ended) and a
// callback, Change, run on the executor goroutine at every change, that
// must not block; kazoo's RELEASE step is the member's own: it gives up
// what the new division moved elsewhere once the party is stable, after
// running its WithDrain task for each item, and keeps the rest (kazoo's members
// release everything and take again).
//
// To compose with other tasks, use the task face: New returns a
// Partitioner whose Join, the Member's Leave and Fenced, and Hold.Fenced
// are task.Task values to run on an executor yourself; Client runs them
// and waits. Start with Member, then Hold, Member.Leave, and
// Client.
//
// With kazoo. On one path, kazoo's SetPartitioner and these members see
// each other in the party (path/party/<32 hex digits>-<identifier>) and
// take items under one lock (path/locks/<item>/<32 hex digits>__lock__<seq>,
// kazoo's Lock), so a kazoo member and a Go member never hold an item at
// once, and with one division function and distinct identifiers they
// cover the set together (TestKazooInterop, on a real server). kazoo's
// members do not fence their writes: the guarantee that a late write is
// refused holds for the Go members' writes only. PROTOCOL.md has the
// protocol, what each fault does, and the tests and figures.
package partition

// Package queue is ZooKeeper's distributed queue: producers Put items,
// consumers Take the first one, in one of two modes. It is the
// counterpart of Apache Curator's SimpleDistributedQueue, of kazoo's
// Queue and LockingQueue, and of ZooKeeper's own DistributedQueue, which
// shares a directory with it.
//
//   - AtMostOnce (the default): Take deletes the item. No item is ever
//     delivered twice. An item can be lost: taken by a consumer that dies
//     before it uses it, or taken by a Take whose delete's reply was lost,
//     which reports it (UnknownTakeError, with the item's data) instead of
//     delivering it.
//   - AtLeastOnce: Take moves the item to the consumer's in-flight
//     directory and Item.Ack deletes it there. No item whose Put succeeded
//     is lost and none is acknowledged twice: an item whose consumer's
//     session ends before the ack goes back to the queue, where it is
//     delivered again.
//
// Items come out lowest priority number first and, within a priority, in
// the order they were put (PROTOCOL.md, "FIFO", says exactly what is promised).
// Items of priority 0 are ZooKeeper's own DistributedQueue's
// ("qn-" + sequence, the data the element): its producers and consumers
// and ours share a directory.
//
//	c, err := queue.NewClient(ex, "/app/jobs", queue.WithMode(queue.AtLeastOnce))
//	_, err = c.Put(ctx, []byte("resize a.png"))
//	it, err := c.Take(ctx) // waits, without polling, while the queue is empty
//	if err != nil {
//		return err
//	}
//	if err := resize(it.Data); err != nil {
//		return err // not acknowledged: the item goes back once this consumer's session ends
//	}
//	return c.Ack(ctx, it)
//
// To compose the queue with other tasks, use the task face: New returns
// a Queue whose Put, PutPriority and Take, and the Item's Ack, are
// task.Task values to run on an executor yourself; Client runs them and
// waits. Options: WithMode, WithBound (refuse puts at a bound),
// WithACL (the ACL of every node the queue creates).
//
// # What each error means
//
//   - Put: an error wrapping ErrOutcomeUnknown when its reply was lost
//     (the item may or may not be in the queue: put it again if you want
//     it there at least once); ErrFull at WithBound's bound, which is
//     best-effort (with P producers the queue holds at most n+P-1 items,
//     and at least once, items returned from flight or given back by a
//     take that ended come on top: they are not counted against it);
//     ErrExhausted when the directory's sequence counter has run out while
//     the directory is not empty (puts go on once the queue has drained
//     and no other program's node is left in it).
//   - Put: ErrDataTooLarge for data the queue's larger requests with the
//     item could not carry (a few hundred bytes under the connection's
//     packet limit, its root counted; PROTOCOL.md, Put), nothing sent.
//   - Take at most once: an *UnknownTakeError carrying the item when its
//     delete's reply was lost: not delivered, not lost silently.
//   - Put and Take: task.ErrNoAuth when an operator's ACL refuses them:
//     nothing put, nothing taken.
//   - Ack: ErrDeliveryLost (a recipes.ErrLost) when not applied (the item
//     is, or will be, back in the queue); ErrOutcomeUnknown when it, or
//     another Ack of the same item, may have been applied; task.ErrNoAuth when an operator's ACL refused it (not
//     applied, the item still this consumer's: the ack goes on in the
//     background until the ACL lets it).
//
// On session expiry a take in progress fails with task.ErrSessionExpired,
// the consumer's in-flight items go back to the queue and its pending
// acks fail; its next Take registers a new consumer. A Take waiting on
// an empty queue sends nothing: it waits on watches (but for the plain
// exists with which each wait on a watch reads the node again every
// twice the session timeout, task.Watch). Items of a dead
// consumer come back when another consumer finds the queue empty or
// registers.
//
// Order: within a priority, in at-most-once mode, items are taken in the
// order their creates were applied (an item put back after a take that
// ended early is created again, behind what is queued then and ahead of
// what is put after); across priorities an item put after a
// consumer's listing waits for its next listing; in at-least-once mode a
// returned item breaks the order once. Items are known by their
// incarnation, not their name, so these promises hold when the server
// hands a name out again (the directory deleted and created again, the
// counter run out), unless DIR.epoch is deleted by hand too (see
// PROTOCOL.md, Faults). Deleting an item or an in-flight copy by hand
// loses it; deleting a consumer's marker returns its items while it may still
// work on them.
//
// The nodes, both protocols with their proofs, interoperation with
// DistributedQueue, the fault table, the tests and canaries:
// recipes/queue/PROTOCOL.md.
package queue

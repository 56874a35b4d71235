// Package lock is a distributed mutual-exclusion lock on a ZooKeeper
// directory (ZooKeeper's lock recipe). It is the counterpart of Apache
// Curator's InterProcessMutex, which this lock excludes on the same path
// and the other way round, and of kazoo's Lock, whose nodes it ignores
// (the two do not exclude each other).
//
// At most one contender at a time sees its node as the lowest of the
// directory; and every write made through Fenced is applied only while the
// writer's lock node exists with the version it was acquired with, so
// ZooKeeper itself rejects the writes of a holder that has lost the lock
// (session expired, node deleted), however late they arrive. The fencing
// tokens (Held.Token) of successive holders strictly increase. An acquire
// that ends in any way but success (deadline, cancel, an operation error)
// leaves no node behind, also when its create's reply was lost. What a
// holder does outside Fenced is its own business: after a loss it is told
// (Held.Done, Held.Err), but not before the client hears of it.
//
//	c, err := lock.NewClient(ex, "/app/lock")
//	held, err := c.Acquire(ctx) // waits its turn; ctx bounds the wait
//	if err != nil {
//		return err
//	}
//	defer c.Release(ctx, held)
//	// Applied only while this lock is held: a former holder's late write is refused.
//	_, err = c.Fenced(ctx, held, task.SetOp("/app/data", data, task.AnyVersion))
//
// Release is started whatever its ctx, so the deferred Release above
// works also when ctx ended in the critical section: it returns ctx's
// error at once and the node is deleted in the background (Done closes
// when the executor starts the release, before the delete, not
// necessarily before Release returns; the Client's next Acquire waits for
// the delete; if the delete fails for good then, the failure goes to the
// executor's Config.OnError).
//
// To compose the lock with other tasks, use the task face: New returns a
// Lock whose Acquire and TryAcquire, and the Held's Release and Fenced,
// are task.Task values to run on an executor yourself; Client runs them
// and waits. The option WithACL sets the ACL of every node the lock
// creates (task.OpenACL by default).
//
// # Trying, waiting, re-entry
//
// TryAcquire takes the lock only if no contender is ahead, and otherwise
// fails with ErrBusy, leaving no node behind. For a budget on waiting,
// give Client.Acquire a context with a deadline (or Lock.Acquire a
// combinators.Deadline): the attempt withdraws its node. The lock is not
// re-entrant: a Client refuses Acquire and TryAcquire while it holds the
// lock, with ErrAlreadyHeld.
//
// # Losing the lock
//
// A hold ends once, closing Held.Done: Err is ErrUnlocked after Release,
// and wraps ErrLockLost and the cause after a loss (the session expired or
// was closed, the node was deleted, or its data changed by someone else).
// Deletions are watched from the first call to Done, Err or IsHeld (a
// watch another user of the session removes, RemoveWatches, is set again;
// a waiter takes such a removal for a wake-up and looks again). While
// the session is suspended IsHeld is false and Err still nil; on
// reconnect to the same session IsHeld is true again. Unlike election
// (which gives leadership up after a fraction of the session timeout
// without the server), a hold ends only when the loss is heard: a process
// cut off or paused past its session timeout runs on, believing it holds,
// until it hears of the expiry; only its fenced writes are safe. Leave executor.Config.Seed
// zero in production, and do not restore a backup of a lock directory (a
// node re-created under a deleted contender's name passes for it), nor
// write a waiting contender's node: a holder marks its node so that the
// next waiter holds without listing, and any write to that node passes
// for the mark (its successor may then hold while the holder below it
// still does; a write to the holder's node ends its hold, also one that
// races the mark, and the holder deletes the node). Contender nodes
// whose ACL (WithACL) refuses WRITE are not marked: the hold goes on
// unmarked, and its successor lists the directory once it goes.
//
// # Cost
//
// An uncontended acquire takes one round trip; a client that re-takes a
// lock no one else asked for since its last hold takes one round trip (a
// create and a plain exists of the directory, sent together) and lists
// nothing; a
// release wakes only the next waiter, which holds on the notification
// without listing the directory again.
//
// The protocol, its proof, the fault table, the sequence counter's
// wrap-around, the tests, canaries and measured figures:
// recipes/lock/PROTOCOL.md.
package lock

// Package rwlock is a readers-writer lock on a ZooKeeper directory: many
// readers or one writer. It is the counterpart of Apache Curator's
// InterProcessReadWriteLock, named so that the two exclude each other on
// one path, and of kazoo's WriteLock and ReadLock (whose nodes it
// ignores).
//
// Any number of readers hold the lock at once, or one writer alone.
// Writers are not starved: a reader that comes after a waiting writer
// waits for it, even while only readers hold. Every write made through
// Fenced is applied only while the holder's lock node exists, so
// ZooKeeper itself refuses the writes of a holder that has lost the lock
// (session expired, node deleted), however late they arrive; a writer's
// fenced writes are never applied while another holder's are, and a
// reader's never while a writer's are.
//
//	c, err := rwlock.NewClient(ex, "/app/config-lock")
//	r, err := c.AcquireRead(ctx) // shared: any number of readers at once
//	if err != nil {
//		return err
//	}
//	// ... read ...
//	c.Release(ctx, r)
//	w, err := c.Acquire(ctx) // exclusive: one writer alone
//	if err != nil {
//		return err
//	}
//	defer c.Release(ctx, w)
//	_, err = c.Fenced(ctx, w, task.SetOp("/app/config", data, task.AnyVersion))
//
// Release is started whatever its ctx, so the deferred Release above
// works also when ctx ended meanwhile: it returns ctx's error at once and
// the node is deleted in the background (Done closes when the executor
// starts the release, before the delete, not necessarily before Release
// returns; the Client's next acquire waits for the delete). A background delete that
// fails for good goes to the executor's Config.OnError: log or count what
// it hears there (task.ErrClosed and task.ErrSessionExpired only say that
// the session ended, taking the node with it).
//
// To compose the lock with other tasks, use the task face: New returns an
// RWLock whose Acquire, AcquireRead, TryAcquire and TryAcquireRead, and
// the Held's Release and Fenced, are task.Task values to run on an
// executor yourself; Client runs them and waits. The option WithACL sets
// the ACL of every node the lock creates (task.OpenACL by default).
//
// # Using it
//
// One Client serves both modes: the Held knows its mode, and Release
// gives back either. TryAcquire and TryAcquireRead fail with ErrBusy
// where Acquire would wait, leaving no node behind; an acquire that ends
// in any way but success (deadline, cancel, error) leaves none either
// (its node is deleted in the background, and the Client's next acquire
// waits for that, as for a lost hold's node: it never queues behind a
// node of its own).
// The lock is not re-entrant: Client refuses Acquire and TryAcquire while
// it holds the lock in either mode (an upgrade), and AcquireRead and
// TryAcquireRead while it holds the write lock (a downgrade), with
// ErrAlreadyHeld. It allows any number of read locks at once, but a
// goroutine that holds the read lock must not AcquireRead again (a writer
// queued in between would make the two wait on each other). No downgrade
// is offered: release the write lock and take the read lock.
//
// A hold ends once, closing Held.Done: Err is ErrUnlocked after Release,
// and wraps ErrLockLost and the cause after a loss (session expired or
// closed, node deleted or changed by someone else). While the session is
// suspended IsHeld is false and Err still nil. A reader's fenced writes
// are ordered against every writer's (while its node exists no writer
// holds), not among readers. Fencing tokens (Held.Token) are the nodes'
// czxids: a writer's is above every earlier holder's and below every later
// one's, among holders whose node exists. A waiter whose node an operator
// deleted can still be handed a Held, after a later writer's grant and
// with a lower token: that Held is lost from the start (its Done closes
// once watched, its fenced writes are refused). Leave executor.Config.Seed zero in production, and do not
// restore a backup of a lock directory.
//
// The safety proof, the protocol, interoperation with Curator, the fault
// table, the tests and canaries: recipes/rwlock/PROTOCOL.md.
package rwlock

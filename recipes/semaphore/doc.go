// Package semaphore is a counting semaphore on ZooKeeper: at most n
// leases on one path are held at any instant. It is the counterpart of
// Apache Curator 5.4's InterProcessSemaphoreV2, whose node layout and
// protocol it follows, so Curator clients and this package share one path
// and together never hold more than n leases; kazoo's Semaphore does the
// same job.
//
// At most n leases on one path are held at any instant, across every
// process that uses the path with the same n. A lease is lost when its
// session ends, and a lost lease is signalled as a lock's loss is
// (recipes/lock): Done is closed and Err wraps ErrLeaseLost and the cause.
// Writes made through Fenced are applied only while the lease is held. An
// acquire that fails, is canceled or passes its deadline leaves no node
// behind, also when a reply was lost. Bad input gets a typed error at
// once: a path ZooKeeper refuses (or "/") task.ErrInvalidPath; n < 1, a
// nil executor or option, or AcquireMany of k < 1 or k > n leases
// task.ErrInvalidArgument; a nil ctx executor.ErrNilContext.
//
//	c, err := semaphore.NewClient(ex, "/app/workers", 2)
//	l, err := c.Acquire(ctx) // waits until one of the 2 leases is free
//	if err != nil {
//		return err
//	}
//	defer c.Release(ctx, l)
//	// Applied only while the lease is held; l.Done() is closed if it is lost.
//	_, err = c.Fenced(ctx, l, task.CreateOp("/app/results/job-1", data, task.Persistent))
//
// Release is started whatever its ctx, so the deferred Release above
// works also when ctx ended meanwhile: it returns ctx's error at once and
// the lease node is deleted in the background (Done closes when the
// executor starts the release, before the delete, not necessarily before
// Release returns; the Client's next acquire waits for the delete, as for
// its other deletes in the background: see Client). A
// background delete that fails for good goes to the executor's
// Config.OnError: log or count what it hears there (task.ErrClosed and
// task.ErrSessionExpired only say that the session ended, taking the
// node with it).
//
// To compose the semaphore with other tasks, use the task face: New
// returns a Semaphore whose Acquire, AcquireMany and TryAcquire, and the
// Lease's Release and Fenced, are task.Task values to run on an executor
// yourself; Client runs them and waits.
// The option WithACL sets the ACL of every node the semaphore creates
// (task.OpenACL by default).
//
// # Holding and losing a lease
//
// A Lease ends once, closing Done: by Release (Err is ErrReleased) or by
// loss (Err wraps ErrLeaseLost and the cause): the session expired or was
// closed, or the node was deleted or written by someone else. Deletions
// are watched from the first call to Done, Err or IsHeld. While the
// session is suspended the lease is uncertain: IsHeld is false, Err still
// nil; on reconnect to the same session IsHeld is true again. A crashed
// process's lease counts against n until the server expires its session.
// A process frozen past its session timeout runs on believing it holds
// until it hears of the expiry; every fenced write it sends meanwhile is
// refused. Do not create lease nodes again by hand under a deleted node's
// name: a forged node passes for the lease. Do not write the nodes under
// PATH/locks (the internal lock's contenders, a recipes/lock): a write to
// a waiting one passes for its holder's mark, two acquirers may then take
// the internal lock at once and wait on each other's leases for good
// (never more than n holders: the count still holds). TryAcquire fails
// with ErrBusy when no lease is free or another acquirer is ahead of it,
// leaving no node behind.
//
// The protocol, the proof of at most n holders, fencing, the fault table,
// the tests and figures: recipes/semaphore/PROTOCOL.md.
package semaphore

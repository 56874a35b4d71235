// Package fence makes a lock honest for writes that go to a store outside
// ZooKeeper: any key/value store with a compare-and-swap. The store keeps,
// beside each value, the fencing token of the holder that wrote it, and a
// write goes through only if the stored token is not above the writer's,
// checked and applied in one compare-and-swap of the store's own. A holder
// that was paused (garbage collection, a stopped VM) past its session
// timeout, lost its lock while frozen and wakes up writing is refused by
// the store once a newer holder has written the key.
//
// recipes/lock's Fenced (Client.Fenced, Held.Fenced) does this for
// writes to ZooKeeper itself (a multi with a check on the lock node).
// Most critical sections write elsewhere; this package is for them.
// Neither Curator nor kazoo has a counterpart.
//
//	locks, err := lock.NewClient(ex, "/app/config-lock")
//	held, err := locks.Acquire(ctx)
//	if err != nil {
//		return err
//	}
//	defer locks.Release(ctx, held)
//	err = fence.Write(ctx, store, "config", held.Token(), value)
//	if errors.Is(err, fence.ErrFenced) {
//		// a newer holder has written "config": this hold is over
//	}
//
// To compose with other tasks, use the task face: WriteTask, UpdateTask,
// ReadTask and DeleteTask are the same calls as tasks, over a TaskStore
// whose operations are tasks.
//
// Memory is a Store in memory; recipes/fence/boltstore is one on a
// database file (bbolt); recipes/fence/fencetest checks a Store you write.
//
// Tokens: recipes/lock's Held.Token and recipes/election's
// Leadership.Token (zxids of the holders' nodes: they strictly increase
// from one holder of a lock, or one leader of an election, to the next).
// Fence each key with one lock or one election: tokens of two locks do
// not follow the order of their holds (a node made early, while its
// client waited, may hold after another lock's later one), so across
// locks a refused holder need not have lost its lock. A semaphore
// lease's token does not order holders: the fence is not for it.
//
// # The guarantee
//
// On each key, the writes the store accepts carry tokens that never go
// down. So once a holder has written a key (or claimed it with Read), no
// holder with a lower token writes it again: every write of a former
// holder that arrives later is refused with a *FencedError (errors.Is
// ErrFenced), and the store is unchanged. A write is refused only when a
// higher token has written the key: a holder's own writes, however many,
// are never refused for being its own.
//
// The fence sees only what has reached the store: a former holder's late
// write that arrives before any newer holder has written or claimed that
// key is accepted, as a slow write of its hold would be. That is safe if
// you read what you act on through Read or Update (never the store's own
// Load followed by a Write: a lost update), and put what must change
// together under one key (the fence is per key). Never remove a key's
// entry or lower its token by other means than this package. Tokens of
// one ZooKeeper ensemble do not compare with another's: after an ensemble
// loses its data every new holder is refused until the store's entries
// are reset by hand.
//
// A refused holder (of the one lock or election the key is fenced with)
// has lost its lock: end the section and release. A
// failed compare-and-swap (an *OpError) leaves the outcome unknown: a
// Write may be repeated with the same token; an Update that is not
// idempotent may then apply twice. Write, Update, Read and Delete block
// the calling goroutine: call them from your critical section, not from a
// task.
//
// What the fence does not guarantee, in full, the store's primitive, the
// protocol and its proof, the tests and canaries: recipes/fence/PROTOCOL.md.
package fence

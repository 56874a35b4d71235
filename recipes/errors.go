// Package recipes holds what the coordination recipes under it share: the
// errors that mean the same thing in each, so that one errors.Is works
// whichever recipe an error came from.
//
//	held, err := c.TryAcquire(ctx) // a lock, rwlock or semaphore Client
//	if errors.Is(err, recipes.ErrBusy) {
//		return nil // someone else has it: try later
//	}
//
// Each recipe's own name for these errors (lock.ErrBusy, semaphore.ErrBusy,
// lock.ErrLockLost, election.ErrLost, ...) is the same value as the one
// here; queue.ErrDeliveryLost is a value of its own that is also an
// ErrLost. The recipes themselves are the packages below: recipes/lock,
// recipes/election, recipes/queue and the rest.
package recipes

import "errors"

var (
	// ErrBusy: a try that does not wait found what it asked for taken
	// (a lock or rwlock held or waited for, no semaphore lease free). It
	// leaves no node behind.
	ErrBusy = errors.New("busy: taken by another contender")
	// ErrAlreadyHeld: a Client asked for what it already holds (the locks
	// are not re-entrant).
	ErrAlreadyHeld = errors.New("already held by this Client")
	// ErrLost: what was held (a lock, a lease, leadership, a queue item in
	// delivery, or, while acquiring, the contender's node) is no longer
	// ours: the session expired or was closed, or someone else deleted or
	// changed the node.
	// It wraps the cause; a fenced write that ZooKeeper rejected wraps it
	// too, with the server's error.
	ErrLost = errors.New("lost")
)

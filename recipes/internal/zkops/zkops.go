// Package zkops holds the small ZooKeeper operations that the recipes
// (lock, election, barrier, group) share: the retry policy they apply to
// single operations, creating a path with its ancestors, and deleting a
// node as a cleanup that survives connection loss.
//
// Every function returns a task.Task and runs nothing by itself.
//
//   - Retry repeats an operation that failed with connection loss or was
//     not sent. After connection loss the executor's task queue is paused
//     until the reconnect; the backoff only spaces the retries of a
//     connection that keeps failing. Scope deadlines still apply.
//   - EnsurePath(p) creates p as a persistent node with nil data, retrying
//     under Retry. ErrNodeExists is success (someone else made it).
//     ErrNoNode means a missing parent: the parent is ensured first (the
//     same way, up to "/"), then p is created again. Any other error ends
//     the task with that error.
//   - Delete(p) deletes p at any version under Retry. ErrNoNode (already
//     gone), ErrSessionExpired and ErrClosed (the session ended and took
//     its ephemeral nodes with it) are success; any other error is
//     returned.
//   - DeleteOwned(p, owner) reads p's stat under Retry and deletes it at
//     the version read only if its ephemeral owner is session owner; a
//     node that is missing or owned by another session is left alone. The
//     errors that Delete treats as success are success here too.
package zkops

import (
	"errors"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/task"
)

// Retry is the policy the recipes apply to single operations whose
// outcome a retry settles (connection loss, not sent).
var Retry = c.Policy{Backoff: c.Backoff{Initial: 10 * time.Millisecond, Max: time.Second, Multiplier: 2, Jitter: 0.5}}

// EnsurePath creates path and its missing ancestors as persistent nodes;
// nodes already there are fine. "/" and "" are done at once.
func EnsurePath(path string) task.Task[task.Unit] {
	if path == "/" || path == "" {
		return task.Done
	}
	create := c.Map(c.Catch(c.Retry(task.Create(path, nil, task.Persistent), Retry), func(err error) task.Task[string] {
		if errors.Is(err, task.ErrNodeExists) {
			return task.Value(path)
		}
		return task.Fail[string](err)
	}), func(string) task.Unit { return task.Unit{} })
	return c.Catch(create, func(err error) task.Task[task.Unit] {
		if !errors.Is(err, task.ErrNoNode) {
			return task.Fail[task.Unit](err)
		}
		return c.Seq(EnsurePath(task.Parent(path)), create)
	})
}

// Delete deletes path at any version, retrying past connection loss. A
// node already gone, or a session that ended (taking its ephemeral nodes),
// is success.
func Delete(path string) task.Task[task.Unit] {
	return c.Catch(c.Retry(task.Delete(path, task.AnyVersion), Retry), goneOK)
}

// DeleteOwned deletes path if its ephemeral owner is session owner,
// retrying past connection loss. A node already gone or owned by another
// session, or a session that ended (taking its ephemeral nodes), is
// success.
func DeleteOwned(path string, owner int64) task.Task[task.Unit] {
	del := c.Then(c.Retry(task.Exists(path), Retry), func(st *task.Stat) task.Task[task.Unit] {
		if st == nil || st.EphemeralOwner != owner {
			return task.Done
		}
		return c.Retry(task.Delete(path, st.Version), Retry)
	})
	return c.Catch(del, goneOK)
}

// goneOK is the cleanup's view of an error: a node that is gone or a
// session that ended is success.
func goneOK(err error) task.Task[task.Unit] {
	if errors.Is(err, task.ErrNoNode) || errors.Is(err, task.ErrSessionExpired) || errors.Is(err, task.ErrClosed) {
		return task.Done
	}
	return task.Fail[task.Unit](err)
}

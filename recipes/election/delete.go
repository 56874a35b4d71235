package election

import (
	"errors"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/task"
)

// deleteNode deletes path if its ephemeral owner is session owner,
// retrying past connection loss. A node already gone or owned by someone
// else, or a session that ended (taking its ephemeral nodes), is success.
func deleteNode(path string, owner int64) task.Task[task.Unit] {
	del := c.Then(c.Retry(task.Exists(path), retry), func(st *task.Stat) task.Task[task.Unit] {
		if st == nil || st.EphemeralOwner != owner {
			return task.Done
		}
		return c.Retry(task.Delete(path, st.Version), retry)
	})
	return c.Catch(del, func(err error) task.Task[task.Unit] {
		if errors.Is(err, task.ErrNoNode) || errors.Is(err, task.ErrSessionExpired) || errors.Is(err, task.ErrClosed) {
			return task.Done
		}
		return task.Fail[task.Unit](err)
	})
}

func deleteAll(paths []string, owner int64) task.Task[task.Unit] {
	loop := c.Loop(0, func(i int) bool { return i < len(paths) }, func(i int) task.Task[int] {
		return c.Map(deleteNode(paths[i], owner), func(task.Unit) int { return i + 1 })
	})
	return c.Map(loop, func(int) task.Unit { return task.Unit{} })
}

// ensurePath creates path and its missing ancestors as persistent nodes;
// nodes already there (someone else made them) are fine.
func ensurePath(path string) task.Task[task.Unit] {
	if path == "/" || path == "" {
		return task.Done
	}
	create := c.Catch(c.Retry(task.Create(path, nil, task.Persistent), retry), func(err error) task.Task[string] {
		if errors.Is(err, task.ErrNodeExists) {
			return task.Value(path)
		}
		return task.Fail[string](err)
	})
	return c.Catch(c.Map(create, func(string) task.Unit { return task.Unit{} }), func(err error) task.Task[task.Unit] {
		if !errors.Is(err, task.ErrNoNode) {
			return task.Fail[task.Unit](err)
		}
		return c.Seq(ensurePath(task.Parent(path)), c.Map(create, func(string) task.Unit { return task.Unit{} }))
	})
}

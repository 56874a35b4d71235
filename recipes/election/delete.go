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

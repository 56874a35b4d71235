package election

import (
	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

func deleteAll(paths []string, owner int64) task.Task[task.Unit] {
	loop := c.Loop(0, func(i int) bool { return i < len(paths) }, func(i int) task.Task[int] {
		return c.Map(zkops.DeleteOwned(paths[i], owner), func(task.Unit) int { return i + 1 })
	})
	return c.Map(loop, func(int) task.Unit { return task.Unit{} })
}

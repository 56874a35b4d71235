// Package good has a flow that suspends only at task.Await.
package good

import "github.com/zkflow/zkflow/task"

func Double(t task.Task[int]) task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		v, err := task.Await(f, t)
		return 2 * v, err
	})
}

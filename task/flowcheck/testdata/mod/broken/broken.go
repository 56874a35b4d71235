// Package broken does not compile: flowcheck reports the error and fails.
package broken

import "github.com/zkflow/zkflow/task"

func Wait() task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		return undefined, nil
	})
}

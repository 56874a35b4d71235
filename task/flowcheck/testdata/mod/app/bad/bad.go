// Package bad has a flow whose body waits on a channel.
package bad

import "github.com/zkflow/zkflow/task"

func Wait(ch chan int) task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		return <-ch, nil
	})
}

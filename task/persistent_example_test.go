package task_test

import (
	"fmt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// A recursive watch reports every change below its path, each time, until
// it is removed.
func ExampleAddWatch() {
	srv := fakezk.New(fakezk.Config{})
	ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{})})
	defer ex.Shutdown()

	var w *task.PersistentWatch
	executor.Submit(ex, task.AddWatch("/app", task.WatchPersistentRecursive), func(pw *task.PersistentWatch, err error) { w = pw })
	ex.RunUntilIdle()

	// read prints the watch's events until it ends.
	var read func()
	read = func() {
		executor.Submit(ex, w.Next(), func(ev task.Event, err error) {
			if err != nil {
				fmt.Println("end:", err)
				return
			}
			fmt.Println(ev)
			read()
		})
	}
	read()
	for _, t := range []task.Task[string]{
		task.Create("/app", nil, task.Persistent),
		task.Create("/app/a", []byte("1"), task.Persistent),
	} {
		executor.Submit(ex, t, nil)
	}
	executor.Submit(ex, task.Set("/app/a", []byte("2"), 0), nil)
	executor.Submit(ex, task.Delete("/app/a", 1), nil)
	ex.RunUntilIdle()
	executor.Submit(ex, task.RemoveWatches("/app", task.WatcherAny), nil)
	ex.RunUntilIdle()
	// Output:
	// NodeCreated /app
	// NodeCreated /app/a
	// NodeDataChanged /app/a
	// NodeDeleted /app/a
	// end: zk watch /app: watch removed
}

package task_test

import (
	"errors"
	"fmt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// A Task written by hand: a step starts work and calls its continuation
// once. Operations fail with errors that name the operation and path.
func Example() {
	srv := fakezk.New(fakezk.Config{})
	ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{})})
	defer ex.Shutdown()

	// createThenWatch creates a node, then waits for its next change.
	createThenWatch := task.Task[task.Event](func(s *task.Scope, k task.Cont[task.Event]) {
		task.Create("/config", []byte("v1"), task.Persistent)(s, func(path string, err error) {
			if err != nil {
				k(task.Event{}, err)
				return
			}
			task.GetW(path)(s, func(d task.DataWatch, err error) {
				if err != nil {
					k(task.Event{}, err)
					return
				}
				fmt.Printf("read %s, waiting for a change\n", d.Data.Data)
				task.Run(s, d.Watch.Wait(), k)
			})
		})
	})
	executor.Submit(ex, createThenWatch, func(ev task.Event, err error) { fmt.Println("event:", ev, err) })
	ex.RunUntilIdle()
	executor.Submit(ex, task.Set("/config", []byte("v2"), 0), nil)
	ex.RunUntilIdle()

	executor.Submit(ex, task.Get("/missing"), func(_ task.Data, err error) {
		var oe *task.OpError
		fmt.Println(err, errors.Is(err, task.ErrNoNode), errors.As(err, &oe) && oe.Op == "get")
	})
	ex.RunUntilIdle()
	// Output:
	// read v1, waiting for a change
	// event: NodeDataChanged /config <nil>
	// zk get /missing: node does not exist true true
}

// Paths are checked against ZooKeeper's rules before anything is sent.
func ExampleValidatePath() {
	for _, p := range []string{"/a/b", "a", "/a/", "/a//b", "/a/./b", "/a\x01"} {
		fmt.Printf("%q: %v\n", p, task.ValidatePath(p, false))
	}
	fmt.Println(task.ValidatePath("/queue/item-", true))
	// Output:
	// "/a/b": <nil>
	// "a": invalid path "a": must start with /
	// "/a/": invalid path "/a/": must not end with /
	// "/a//b": invalid path "/a//b": empty node name
	// "/a/./b": invalid path "/a/./b": relative paths not allowed
	// "/a\x01": invalid path "/a\x01": invalid character U+0001 at 2
	// <nil>
}

package executor_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// Run drives the executor on its own goroutine; Await is the blocking,
// context-first way to run a chain on it.
func Example() {
	srv := fakezk.New(fakezk.Config{})
	defer srv.Close()
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{})})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ex.Run(ctx) }()
	defer func() { cancel(); <-done }()

	create := c.Then(task.Create("/app", nil, task.Persistent), func(string) task.Task[string] {
		return task.Create("/app/member-", []byte("a"), task.EphemeralSequential)
	})
	path, err := executor.Await(ctx, ex, create)
	fmt.Println(path, err)
	// Output:
	// /app/member-0000000000 <nil>
}

// Step-by-step driving, as a simulation does it: the test goroutine runs
// the executor and the server, and a fake clock decides when deadlines
// fire. While the session is disconnected the task queue is paused.
func ExampleExecutor_RunUntilIdle() {
	clk := fakezk.NewClock(fakezk.Epoch)
	srv := fakezk.New(fakezk.Config{Clock: clk, Deterministic: true})
	defer srv.Close()
	conn := srv.Connect(fakezk.ConnConfig{Timeout: 10 * time.Second})
	ex, _ := executor.New(executor.Config{Conn: conn, Clock: clk})
	defer ex.Shutdown()
	drive := func() {
		for ex.RunUntilIdle()+srv.RunUntilIdle() > 0 {
		}
	}
	drive()

	// A read with a 2s deadline, sent while the connection is cut.
	srv.Partition(conn, time.Minute, false)
	drive()
	fmt.Println("paused:", ex.Paused())
	var got error
	executor.SubmitWith(ex, task.Get("/"), executor.Options{Deadline: clk.Now().Add(2 * time.Second)},
		func(_ task.Data, err error) { got = err })
	drive()
	clk.Advance(2 * time.Second)
	drive()
	fmt.Println(errors.Is(got, task.ErrDeadlineExceeded), errors.Is(got, context.DeadlineExceeded))
	// Output:
	// paused: true
	// true true
}

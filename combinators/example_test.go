package combinators_test

import (
	"errors"
	"fmt"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// newExample returns an executor on an in-memory ZooKeeper with a
// simulated clock, driven by hand.
func newExample() (*executor.Executor, *fakezk.Clock) {
	clk := fakezk.NewClock(fakezk.Epoch)
	srv := fakezk.New(fakezk.Config{Clock: clk})
	ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: clk, Seed: 1})
	return ex, clk
}

// A chain of ZooKeeper operations: create a counter node if missing, then
// read it. Then feeds each value to the next step; OnError turns "already
// exists" into success.
func ExampleThen() {
	ex, _ := newExample()
	defer ex.Shutdown()
	ensure := c.OnError(task.Create("/counter", []byte("41"), task.Persistent),
		func(error) task.Task[string] { return task.Value("/counter") }, task.ErrNodeExists)
	read := c.Then(ensure, func(path string) task.Task[task.Data] { return task.Get(path) })
	for range 2 {
		executor.Submit(ex, read, func(d task.Data, err error) {
			fmt.Printf("data=%s version=%d err=%v\n", d.Data, d.Stat.Version, err)
		})
	}
	ex.RunUntilIdle()
	// Output:
	// data=41 version=0 err=<nil>
	// data=41 version=0 err=<nil>
}

// Retry repeats a task while it fails with a named error, waiting the
// backoff on the executor's clock.
func ExampleRetry() {
	ex, clk := newExample()
	defer ex.Shutdown()
	attempt := 0
	flaky := task.Func(func(s *task.Scope) (int, error) {
		attempt++
		fmt.Printf("attempt %d at +%v\n", attempt, s.Now().Sub(fakezk.Epoch))
		if attempt < 3 {
			return 0, task.ErrConnectionLoss
		}
		return attempt, nil
	})
	p := c.Policy{Attempts: 5, Backoff: c.Backoff{Initial: time.Second, Multiplier: 2}}
	executor.Submit(ex, c.Retry(flaky, p), func(v int, err error) { fmt.Println("result", v, err) })
	for ex.RunUntilIdle(); clk.AdvanceToNext(); ex.RunUntilIdle() {
	}
	// Output:
	// attempt 1 at +0s
	// attempt 2 at +1s
	// attempt 3 at +3s
	// result 3 <nil>
}

// Deadline ends a chain at an absolute time; the cleanup it registered
// still runs.
func ExampleDeadline() {
	ex, clk := newExample()
	defer ex.Shutdown()
	slow := func(s *task.Scope, k task.Cont[task.Unit]) {
		s.Defer(task.Func(func(*task.Scope) (task.Unit, error) {
			fmt.Println("cleanup runs")
			return task.Unit{}, nil
		}))
		c.Sleep(time.Minute)(s, k)
	}
	executor.Submit(ex, c.Deadline(task.Task[task.Unit](slow), fakezk.Epoch.Add(5*time.Second)),
		func(_ task.Unit, err error) {
			fmt.Println("deadline exceeded:", errors.Is(err, task.ErrDeadlineExceeded))
		})
	for ex.RunUntilIdle(); clk.AdvanceToNext(); ex.RunUntilIdle() {
	}
	// Output:
	// deadline exceeded: true
	// cleanup runs
}

// All runs tasks together and joins their values in order; Fork starts a
// flow of its own and goes on at once.
func ExampleAll() {
	ex, _ := newExample()
	defer ex.Shutdown()
	mk := func(p string) task.Task[string] { return task.Create(p, nil, task.Persistent) }
	chain := c.Then(c.All(mk("/a"), mk("/b"), mk("/c")), func(paths []string) task.Task[task.Unit] {
		fmt.Println("created", paths)
		return c.Fork(task.Delete("/b", task.AnyVersion), func(_ task.Unit, err error) {
			fmt.Println("forked delete done:", err)
		})
	})
	executor.Submit(ex, chain, func(_ task.Unit, err error) { fmt.Println("chain done:", err) })
	ex.RunUntilIdle()
	// Output:
	// created [/a /b /c]
	// chain done: <nil>
	// forked delete done: <nil>
}

package barrier_test

import (
	"context"
	"fmt"
	"sync"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
)

// A barrier as task chains: two waiters are held while the node exists,
// through a change of its data, and pass when it is removed. (They pass
// after the remover hears its reply: each waiter checks again with exists
// after its watch fires, rather than trusting the event.)
func ExampleBarrier() {
	srv := fakezk.New(fakezk.Config{})
	ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
	defer ex.Shutdown()
	b, _ := barrier.New("/deploy/hold")

	executor.Submit(ex, b.Set([]byte("v1")), func(_ task.Unit, err error) { fmt.Println("set:", err) })
	ex.RunUntilIdle()
	for i := range 2 {
		executor.Submit(ex, b.Wait(), func(_ task.Unit, err error) { fmt.Printf("waiter %d passed: %v\n", i, err) })
	}
	ex.RunUntilIdle()
	executor.Submit(ex, c.Map(task.Set(b.Path(), []byte("v2"), task.AnyVersion), func(task.Stat) task.Unit { return task.Unit{} }),
		func(_ task.Unit, err error) { fmt.Println("data changed:", err) })
	ex.RunUntilIdle()
	executor.Submit(ex, b.Remove(), func(_ task.Unit, err error) { fmt.Println("removed:", err) })
	ex.RunUntilIdle()
	// Output:
	// set: <nil>
	// data changed: <nil>
	// removed: <nil>
	// waiter 0 passed: <nil>
	// waiter 1 passed: <nil>
}

// The blocking API of the double barrier: three workers, each with its
// own session, enter together, work, and leave together.
func ExampleDoubleClient() {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ctx, stop := context.WithCancel(context.Background())
	var running sync.WaitGroup
	defer func() { stop(); running.Wait() }()

	const workers = 3
	var mu sync.Mutex
	var log []string
	note := func(s string) { mu.Lock(); log = append(log, s); mu.Unlock() }
	var wg sync.WaitGroup
	for i := range workers {
		ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: uint64(i + 1)})
		running.Add(1)
		go func() { defer running.Done(); _ = ex.Run(ctx) }()
		d, _ := barrier.NewDoubleClient(ex, "/jobs/round-1", workers)
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := d.Enter(ctx)
			if err != nil {
				note("enter: " + err.Error())
				return
			}
			note("entered")
			note(fmt.Sprint("leave: ", d.Leave(ctx, p)))
		}()
	}
	wg.Wait()
	entered, left := 0, 0
	for _, l := range log {
		switch l {
		case "entered":
			entered++
		case "leave: <nil>":
			left++
		}
	}
	fmt.Println("entered:", entered, "left:", left)
	// Output:
	// entered: 3 left: 3
}

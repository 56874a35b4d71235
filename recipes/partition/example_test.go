package partition_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// Task chains on two executors of one fake server, driven step by step on
// its clock: a second member joins, and the items move once the party has
// been stable for Stable: w1 gives up b and d (their lock nodes deleted),
// then w2 takes them. Shutting the executors down ends both members.
func ExamplePartitioner_Join() {
	clock := fakezk.NewClock(fakezk.Epoch)
	srv := fakezk.New(fakezk.Config{Clock: clock})
	exs := make([]*executor.Executor, 2)
	for i := range exs {
		exs[i], _ = executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: clock, Seed: uint64(i + 1)})
		defer exs[i].Shutdown()
	}
	// settle runs both executors, then the clock's timers, until nothing is left.
	settle := func() {
		for {
			for exs[0].RunUntilIdle()+exs[1].RunUntilIdle() > 0 {
			}
			if !clock.AdvanceToNext() {
				return
			}
		}
	}
	p, _ := partition.New("/jobs", []string{"a", "b", "c", "d"}, partition.WithStable(time.Second))
	report := func(id string) func(partition.Change) {
		return func(ch partition.Change) {
			if len(ch.Acquired)+len(ch.Released) > 0 || ch.State == partition.Acquired {
				fmt.Printf("%s: %s, took %v, gave up %v\n", id, ch.State, ch.Acquired, ch.Released)
			}
		}
	}
	executor.Submit(exs[0], p.Join("w1", report("w1")), nil)
	settle()
	executor.Submit(exs[1], p.Join("w2", report("w2")), nil)
	settle()
	// Output:
	// w1: allocating, took [a], gave up []
	// w1: allocating, took [b], gave up []
	// w1: allocating, took [c], gave up []
	// w1: acquired, took [d], gave up []
	// w1: acquired, took [], gave up [b d]
	// w2: allocating, took [b], gave up []
	// w2: acquired, took [d], gave up []
	// w2: ended, took [], gave up [b d]
	// w1: ended, took [], gave up [a c]
}

// The blocking face: Wait returns what a member holds once the party is
// stable and its share taken; writes go through the hold's fence.
func ExampleClient() {
	srv := fakezk.New(fakezk.Config{Async: true, Clock: task.RealClock()})
	defer srv.Close()
	ctx, stop := context.WithCancel(context.Background())
	var running sync.WaitGroup
	defer func() { stop(); running.Wait() }()
	ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{})})
	running.Add(1)
	go func() { defer running.Done(); _ = ex.Run(ctx) }()

	c, _ := partition.NewClient(ex, "/jobs", []string{"a", "b"}, partition.WithStable(10*time.Millisecond))
	_, _ = executor.Await(ctx, ex, task.Create("/out", nil, task.Persistent))
	m, _ := c.Join(ctx, "w1", nil)
	held, err := c.Wait(ctx, m)
	fmt.Println("wait:", err)
	for _, h := range held {
		_, err := c.Fenced(ctx, m, h.Item, task.CreateOp("/out/"+h.Item, []byte("done"), task.Persistent))
		fmt.Println("wrote", h.Item+":", err)
	}
	fmt.Println("leave:", c.Leave(ctx, m))
	_, err = c.Fenced(ctx, m, "a", task.CreateOp("/out/late", nil, task.Persistent))
	fmt.Println("after leave:", err)
	// Output:
	// wait: <nil>
	// wrote a: <nil>
	// wrote b: <nil>
	// leave: <nil>
	// after leave: partition: item "a": partition: item not held
}

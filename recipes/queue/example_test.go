package queue_test

import (
	"context"
	"fmt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/queue"
)

// The blocking API in at-least-once mode: a producer puts three jobs, one
// of them urgent; a consumer takes the urgent one first and dies before
// acknowledging it (its session closes); another consumer gets it back,
// under the same name, and acknowledges every job.
func Example() {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	type proc struct {
		ex   *executor.Executor
		stop context.CancelFunc
		done chan struct{}
	}
	start := func(seed uint64) proc {
		ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: seed})
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = ex.Run(ctx) }()
		return proc{ex, stop, done}
	}
	end := func(p proc) { p.ex.Close(); p.stop(); <-p.done }
	ctx := context.Background()
	mode := queue.WithMode(queue.AtLeastOnce)

	pp, cp1, cp2 := start(1), start(2), start(3)
	defer end(pp)
	defer end(cp2)
	producer, _ := queue.NewClient(pp.ex, "/app/jobs", mode)
	c1, _ := queue.NewClient(cp1.ex, "/app/jobs", mode)
	c2, _ := queue.NewClient(cp2.ex, "/app/jobs", mode)

	producer.Put(ctx, []byte("resize a.png"))
	producer.PutPriority(ctx, []byte("page the on-call"), -1)
	producer.Put(ctx, []byte("resize b.png"))

	it, _ := c1.Take(ctx)
	fmt.Printf("c1 took %q (%s)\n", it.Data, it.Name)
	end(cp1) // c1 dies before its Ack: its session closes
	fmt.Println("c1's ack after its end fails:", c1.Ack(ctx, it) != nil)

	for range 3 {
		it, err := c2.Take(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("c2 took %q (%s), ack: %v\n", it.Data, it.Name, c2.Ack(ctx, it))
	}
	// Output:
	// c1 took "page the on-call" (qp-001-0000000001)
	// c1's ack after its end fails: true
	// c2 took "page the on-call" (qp-001-0000000001), ack: <nil>
	// c2 took "resize a.png" (qn-0000000000), ack: <nil>
	// c2 took "resize b.png" (qn-0000000002), ack: <nil>
}

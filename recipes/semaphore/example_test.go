package semaphore_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/task"
)

// The blocking API: three executors (three sessions) share a semaphore of
// two leases. Two hold at once; the third is refused by TryAcquire and
// waits in Acquire until a lease is returned. Writes go through the
// lease's fence.
func Example() {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ctx, stop := context.WithCancel(context.Background())
	var running []chan struct{}
	start := func(seed uint64) *executor.Executor {
		ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: seed})
		done := make(chan struct{})
		go func() { defer close(done); _ = ex.Run(ctx) }()
		running = append(running, done)
		return ex
	}
	var sems []*semaphore.Client
	for i := range 3 {
		s, _ := semaphore.NewClient(start(uint64(i+1)), "/app/workers", 2)
		sems = append(sems, s)
	}
	defer func() {
		stop()
		for _, d := range running {
			<-d
		}
	}()

	a, err := sems[0].Acquire(ctx)
	fmt.Println("a holds:", err, a.IsHeld())
	b, err := sems[1].Acquire(ctx)
	fmt.Println("b holds:", err, b.IsHeld())
	_, err = sems[2].TryAcquire(ctx)
	fmt.Println("c tries:", errors.Is(err, semaphore.ErrBusy))

	got := make(chan *semaphore.Lease)
	go func() {
		l, _ := sems[2].Acquire(ctx)
		got <- l
	}()
	fmt.Println("a returns:", sems[0].Release(ctx, a), a.Err())
	l := <-got
	fmt.Println("c holds:", l.IsHeld())

	_, err = executor.Await(ctx, sems[2].Executor(), l.Fenced(&task.CreateRequest{Path: "/app/out", Data: []byte("by c"), Mode: task.Persistent}))
	fmt.Println("c's fenced write:", err)
	_, err = executor.Await(ctx, sems[0].Executor(), a.Fenced(&task.SetDataRequest{Path: "/app/out", Data: []byte("by a"), Version: -1}))
	fmt.Println("a's fenced write after its return:", errors.Is(err, semaphore.ErrLeaseLost))
	fmt.Println("b and c return:", sems[1].Release(ctx, b), sems[2].Release(ctx, l))
	// Output:
	// a holds: <nil> true
	// b holds: <nil> true
	// c tries: true
	// a returns: <nil> semaphore: lease released
	// c holds: true
	// c's fenced write: <nil>
	// a's fenced write after its return: true
	// b and c return: <nil> <nil>
}

// The task face on a simulated world: one client takes two of three
// leases at once, another takes the third with TryAcquire and is refused
// a fourth; asking for more leases than there are is refused at once.
func Example_acquireMany() {
	w, _ := sim.New(sim.Config{Seed: 1, Clients: 2})
	defer w.Close()
	m, _ := semaphore.New("/app/pool", 3)
	two, err := sim.Run(w, 0, m.AcquireMany(2))
	fmt.Println("client 0 holds", len(two), "leases:", err)
	third, err := sim.Run(w, 1, m.TryAcquire())
	fmt.Println("client 1 holds the third:", err, third.IsHeld())
	_, err = sim.Run(w, 1, m.TryAcquire())
	fmt.Println("a fourth:", errors.Is(err, semaphore.ErrBusy))
	_, err = sim.Run(w, 0, m.AcquireMany(4))
	fmt.Println("four of three:", errors.Is(err, task.ErrInvalidArgument))
	fmt.Println("lease nodes:", len(w.Children("/app/pool/leases")))
	// Output:
	// client 0 holds 2 leases: <nil>
	// client 1 holds the third: <nil> true
	// a fourth: true
	// four of three: true
	// lease nodes: 3
}

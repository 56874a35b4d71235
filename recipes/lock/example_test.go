package lock_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// The blocking API: two executors (two sessions) take turns on one lock;
// the second waits for the first, gets a larger fencing token, and writes
// through a fenced multi.
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
	a, _ := lock.NewClient(start(1), "/app/lock")
	b, _ := lock.NewClient(start(2), "/app/lock")
	defer func() {
		stop()
		for _, d := range running {
			<-d
		}
	}()

	ha, err := a.Acquire(ctx)
	fmt.Println("a holds:", err, ha.IsHeld())

	got := make(chan *lock.Held)
	go func() {
		hb, _ := b.Acquire(ctx)
		got <- hb
	}()
	fmt.Println("a unlocks:", a.Release(ctx, ha), ha.Err())
	hb := <-got
	fmt.Println("b holds with a larger token:", hb.IsHeld(), hb.Token() > ha.Token())

	write := hb.Fenced(&task.CreateRequest{Path: "/app/data", Data: []byte("by b"), Mode: task.Persistent})
	_, err = executor.Await(ctx, b.Executor(), write)
	fmt.Println("b's fenced write:", err)
	_, err = executor.Await(ctx, a.Executor(), ha.Fenced(&task.SetDataRequest{Path: "/app/data", Data: []byte("by a"), Version: -1}))
	fmt.Println("a's fenced write after unlock:", err != nil)
	fmt.Println("b unlocks:", b.Release(ctx, hb))
	// Output:
	// a holds: <nil> true
	// a unlocks: <nil> lock: unlocked
	// b holds with a larger token: true true
	// b's fenced write: <nil>
	// a's fenced write after unlock: true
	// b unlocks: <nil>
}

// Sequence wrap-around, on a simulated server whose lock directory has
// had nearly 2^31 children: a contender the server numbers 2147483647
// (the counter's end) does not queue; once the holder releases, the
// directory is deleted and recreated, and numbering starts again from 0,
// while the fencing token (the node's czxid) keeps growing.
func Example_sequenceWrap() {
	w, _ := sim.New(sim.Config{Seed: 1, Clients: 2})
	defer w.Close()
	l, _ := lock.New("/app/lock")
	sim.Run(w, 0, task.Create("/app", nil, task.Persistent))
	sim.Run(w, 0, task.Create("/app/lock", nil, task.Persistent))
	w.Server.SetCounters("/app/lock", 0, math.MaxInt32-1)

	a, _ := sim.Run(w, 0, l.Acquire())
	fmt.Println("a holds number", a.Seq())
	b := sim.Submit(w, 1, l.Acquire()) // numbered 2147483647: withdraws and waits
	w.Drive()
	fmt.Println("b holds:", b.Done, "contenders:", len(w.Children("/app/lock")))
	sim.Run(w, 0, a.Release())
	w.Settle(func() bool { return b.Done })
	fmt.Println("b holds number", b.V.Seq(), "with a larger token:", b.V.Token() > a.Token())
	// Output:
	// a holds number 2147483646
	// b holds: false contenders: 1
	// b holds number 0 with a larger token: true
}

// TryAcquire takes a free lock and fails with ErrBusy, without waiting, when
// another Client holds it; a Client that holds the lock refuses a second
// Acquire (the lock is not re-entrant).
func ExampleClient_TryAcquire() {
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
	a, _ := lock.NewClient(start(1), "/app/lock")
	b, _ := lock.NewClient(start(2), "/app/lock")
	defer func() {
		stop()
		for _, d := range running {
			<-d
		}
	}()

	ha, err := a.TryAcquire(ctx)
	fmt.Println("a tries:", err)
	_, err = b.TryAcquire(ctx)
	fmt.Println("b tries:", errors.Is(err, lock.ErrBusy))
	_, err = a.Acquire(ctx)
	fmt.Println("a locks again:", errors.Is(err, lock.ErrAlreadyHeld))
	n := 0
	for _, p := range srv.Paths() {
		if strings.HasPrefix(p, "/app/lock/") {
			n++
		}
	}
	fmt.Println("contenders:", n)
	fmt.Println("a unlocks:", a.Release(ctx, ha))
	// Output:
	// a tries: <nil>
	// b tries: true
	// a locks again: true
	// contenders: 1
	// a unlocks: <nil>
}

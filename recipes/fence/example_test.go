package fence_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/fence"
	"github.com/zkflow/zkflow/recipes/lock"
)

// Two processes take turns on one lock and write to a store outside
// ZooKeeper (here the in-memory fence.Memory) with the lock's fencing
// token. The first process's write after its turn ended, however late it
// arrives, is refused by the store once the second has written.
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
	store := &fence.Memory{} // or boltstore, or your database

	ha, _ := a.Acquire(ctx)
	fmt.Println("a writes:", fence.Write(ctx, store, "config", ha.Token(), []byte("by a")))
	fmt.Println("a unlocks:", a.Release(ctx, ha))

	hb, _ := b.Acquire(ctx)
	n, err := fence.Update(ctx, store, "config", hb.Token(), func(old []byte) ([]byte, error) {
		return append(old, " then b"...), nil
	})
	fmt.Printf("b updates: %q %v\n", n, err)

	// a, paused through b's turn, wakes and writes with its old token.
	err = fence.Write(ctx, store, "config", ha.Token(), []byte("late, by a"))
	fmt.Println("a's late write refused:", errors.Is(err, fence.ErrFenced))
	e, _, _ := store.Load(ctx, "config")
	fmt.Printf("stored: %q, by the newer token: %v\n", e.Value, e.Token == hb.Token())
	fmt.Println("b unlocks:", b.Release(ctx, hb))
	// Output:
	// a writes: <nil>
	// a unlocks: <nil>
	// b updates: "by a then b" <nil>
	// a's late write refused: true
	// stored: "by a then b", by the newer token: true
	// b unlocks: <nil>
}

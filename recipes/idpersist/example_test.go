package idpersist_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/idpersist"
)

// A persister replica leads and keeps the limit ahead of the sequence,
// durable in a file first; a generator draws IDs. Then every server loses
// its data: the empty servers refuse the clients, which have seen later
// zxids, until the clients give their sessions up after a session timeout
// and start fresh; the leader restores the sequence from the file, and IDs
// resume above every ID handed out before.
func Example() {
	dir, _ := os.MkdirTemp("", "idpersist-example")
	defer os.RemoveAll(dir)
	store, _ := idpersist.NewFileStore(filepath.Join(dir, "orders.mark"))
	cfg := idpersist.Config{Sequence: "/seq/orders", Limit: "/seq/orders-limit", Election: "/seq/orders-election",
		Store: store, Chunk: 10, LowWater: 3}

	clk := fakezk.NewClock(time.Time{})
	srv := fakezk.New(fakezk.Config{Clock: clk})
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	newExecutor := func() *executor.Executor {
		ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
		wg.Add(1)
		go func() { defer wg.Done(); _ = ex.Run(ctx) }()
		return ex
	}
	defer func() { stop(); wg.Wait() }()

	replica, _ := idpersist.NewReplica(cfg)
	leaderEx := newExecutor()
	wg.Add(1)
	go func() { defer wg.Done(); _ = replica.Serve(ctx, leaderEx) }()

	g, _ := idpersist.NewClient(newExecutor(), cfg)
	for range 5 {
		id, _ := g.Next(ctx)
		fmt.Print(id, " ")
	}
	mark, _ := store.Load()
	fmt.Println("| durable mark", mark)

	srv.Wipe()                   // every server and its data lost
	clk.Advance(5 * time.Second) // past the 4s session timeout: the clients start fresh
	for range 3 {
		id, _ := g.Next(ctx)
		fmt.Print(id, " ")
	}
	fmt.Println("| resumed above the mark")
	// Output:
	// 1 2 3 4 5 | durable mark 10
	// 11 12 13 | resumed above the mark
}

package seqid_test

import (
	"context"
	"fmt"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// Next continues a sequence that a Java service keeps in /ids: its node
// holds ByteBuffer.putLong(41).
func ExampleNext() {
	srv := fakezk.New(fakezk.Config{})
	ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
	defer ex.Shutdown()

	legacy := task.Create("/ids", []byte{0, 0, 0, 0, 0, 0, 0, 41}, task.Persistent)
	next := c.Then(legacy, func(string) task.Task[int64] { return seqid.Next("/ids") })
	block := c.Then(next, func(id int64) task.Task[seqid.Block] {
		fmt.Println(id, seqid.Hex(id))
		return seqid.Reserve("/ids", 100)
	})
	read := c.Then(block, func(b seqid.Block) task.Task[task.Data] {
		fmt.Println("block", b.First, "to", b.Last)
		return task.Get("/ids")
	})
	executor.Submit(ex, read, func(d task.Data, err error) {
		fmt.Printf("node % x %v\n", d.Data, err)
	})
	ex.RunUntilIdle()
	// Output:
	// 42 000000000000002a
	// block 43 to 142
	// node 00 00 00 00 00 00 00 8e <nil>
}

// A Client is the blocking API over a running executor; with a block
// size above 1 it reserves IDs in blocks. A missing node starts the
// sequence at 1.
func ExampleClient() {
	srv := fakezk.New(fakezk.Config{})
	ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(ctx) }()
	defer func() { stop(); <-done }()

	g, _ := seqid.NewClient(ex, "/orders", 1000)
	for range 3 {
		id, err := g.Next(ctx)
		fmt.Println(id, err)
	}
	// Output:
	// 1 <nil>
	// 2 <nil>
	// 3 <nil>
}

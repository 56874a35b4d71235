package cache_test

import (
	"context"
	"fmt"
	"sync"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/cache"
	"github.com/zkflow/zkflow/task"
)

// A ChildrenCache in a task chain: each Next yields what was added,
// removed and re-created since the previous one.
func ExampleChildrenCache() {
	srv := fakezk.New(fakezk.Config{})
	ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
	writer, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 2})
	defer ex.Shutdown()
	defer writer.Shutdown()
	run := func() {
		for ex.RunUntilIdle()+writer.RunUntilIdle() > 0 {
		}
	}
	write := func(t task.Task[task.Unit]) { executor.Submit(writer, t, nil); run() }
	create := func(p string) task.Task[task.Unit] {
		return c.Map(task.Create(p, nil, task.Persistent), func(string) task.Unit { return task.Unit{} })
	}
	show := func(ch cache.Change, err error) {
		name := func(ns []cache.Node) (out []string) {
			for _, n := range ns {
				out = append(out, n.Name())
			}
			return out
		}
		fmt.Printf("workers %v: added %v, removed %v, re-created %v\n", name(ch.Nodes), name(ch.Added), name(ch.Removed), name(ch.Recreated))
	}

	write(c.Seq(create("/workers"), c.Seq(create("/workers/w1"), create("/workers/w2"))))
	cc, _ := cache.NewChildren("/workers")
	executor.Submit(ex, c.Then(cc.Start(), func(*cache.ChildrenCache) task.Task[cache.Change] { return cc.Next() }), show)
	run()
	executor.Submit(ex, cc.Next(), show)
	write(c.Seq(task.Delete("/workers/w1", -1), create("/workers/w3")))
	executor.Submit(ex, cc.Next(), show)
	write(c.Seq(task.Delete("/workers/w2", -1), create("/workers/w2"))) // same name, new node
	// Output:
	// workers [w1 w2]: added [w1 w2], removed [], re-created []
	// workers [w2 w3]: added [w3], removed [w1], re-created []
	// workers [w2 w3]: added [], removed [], re-created [w2]
}

// A NodeCache reports each event on the executor as it reads it.
func ExampleNodeCache() {
	srv := fakezk.New(fakezk.Config{})
	ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
	writer, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 2})
	defer ex.Shutdown()
	defer writer.Shutdown()
	run := func() {
		for ex.RunUntilIdle()+writer.RunUntilIdle() > 0 {
		}
	}
	nc, _ := cache.NewNode("/leader", cache.WithOnEvent(func(ev cache.Event) {
		fmt.Printf("%s %s %q\n", ev.Type, ev.Path, ev.Node.Data)
	}))
	executor.Submit(ex, nc.Start(), nil)
	run()
	executor.Submit(writer, task.Create("/leader", []byte("a"), task.Persistent), nil)
	run()
	executor.Submit(writer, task.Set("/leader", []byte("b"), -1), nil)
	run()
	executor.Submit(writer, task.Delete("/leader", -1), nil)
	run()
	n, ok := nc.Current()
	fmt.Println("cached:", n.Path, ok)
	// Output:
	// added /leader "a"
	// changed /leader "b"
	// removed /leader ""
	// cached:  false
}

// The blocking API: a Client of a TreeCache, started once its first
// snapshot is read, then read with Next while another session writes.
func ExampleNewTreeClient() {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ctx, stop := context.WithCancel(context.Background())
	var running sync.WaitGroup
	defer func() { stop(); running.Wait() }()
	start := func(seed uint64) *executor.Executor {
		ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: seed})
		running.Add(1)
		go func() { defer running.Done(); _ = ex.Run(ctx) }()
		return ex
	}
	reader, writer := start(1), start(2)

	tree, _ := cache.NewTreeClient(reader, "/app", cache.WithData())
	fmt.Println("start:", tree.Start(ctx)) // /app is missing: the cache follows its creation
	for _, p := range []string{"/app", "/app/db"} {
		executor.Await(ctx, writer, task.Create(p, []byte("v1"), task.Persistent))
	}
	var nodes []string
	for len(nodes) < 2 {
		ch, _ := tree.Next(ctx)
		nodes = nil
		for _, n := range ch.Nodes {
			nodes = append(nodes, n.Path+"="+string(n.Data))
		}
	}
	fmt.Println("nodes:", nodes)
	fmt.Println("stop:", tree.Stop(ctx))
	// Output:
	// start: <nil>
	// nodes: [/app=v1 /app/db=v1]
	// stop: <nil>
}

package cache_test

import (
	"fmt"

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
	cc, _ := cache.NewChildren("/workers", cache.Options{})
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
	nc, _ := cache.NewNode("/leader", cache.Options{OnEvent: func(ev cache.Event) {
		fmt.Printf("%s %s %q\n", ev.Type, ev.Path, ev.Node.Data)
	}})
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

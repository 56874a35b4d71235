package group_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/group"
	"github.com/zkflow/zkflow/task"
)

// Task chains on one executor: a view reports each change; a member's
// session expires, and the member is registered again on the new session.
func ExampleGroup_Watch() {
	srv := fakezk.New(fakezk.Config{})
	conn := srv.Connect(fakezk.ConnConfig{})
	ex, _ := executor.New(executor.Config{Conn: conn, Clock: srv.Clock(), Seed: 1})
	other, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 2})
	defer ex.Shutdown()
	defer other.Shutdown()
	run := func() {
		for ex.RunUntilIdle()+other.RunUntilIdle() > 0 {
		}
	}
	g, _ := group.New("/services/web")

	executor.Submit(other, g.Watch(func(ch group.Change) {
		fmt.Printf("members %v, joined %v, left %v\n", ch.Members, ch.Added, ch.Removed)
	}), nil)
	run()
	var web1 *group.Member
	executor.Submit(ex, g.Join("web-1", []byte("10.0.0.1:80")), func(m *group.Member, err error) { web1 = m })
	run()
	executor.Submit(other, g.Join("web-2", []byte("10.0.0.2:80")), nil)
	run()
	srv.Expire(conn) // web-1's node goes with its session
	for other.RunUntilIdle() > 0 {
	}
	run() // web-1's executor learns of the expiry and registers again
	fmt.Println("web-1 registered again:", web1.Registered())
	executor.Submit(ex, web1.Leave(), func(_ task.Unit, err error) { fmt.Println("web-1 left:", err) })
	run()
	// Output:
	// members [], joined [], left []
	// members [web-1], joined [web-1], left []
	// members [web-1 web-2], joined [web-2], left []
	// members [web-2], joined [], left [web-1]
	// members [web-1 web-2], joined [web-1], left []
	// web-1 registered again: true
	// web-1 left: <nil>
	// members [web-2], joined [], left [web-1]
}

// The blocking API: a watcher reads changes with Next while members join
// on other sessions.
func ExampleClient() {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ctx, stop := context.WithCancel(context.Background())
	var running sync.WaitGroup
	defer func() { stop(); running.Wait() }()
	client := func(seed uint64) *group.Client {
		ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: seed})
		running.Add(1)
		go func() { defer running.Done(); _ = ex.Run(ctx) }()
		c, _ := group.NewClient(ex, "/services/db")
		return c
	}
	watcher, db := client(1), client(2)

	w, _ := watcher.Watch(ctx)
	ch, _ := w.Next(ctx)
	fmt.Println("at first:", ch.Members)
	m, _ := db.Join(ctx, "db-1", []byte("primary"))
	ch, _ = w.Next(ctx)
	fmt.Println("joined:", ch.Added, "members:", ch.Members)
	fmt.Println("leave:", db.Leave(ctx, m))
	ch, _ = w.Next(ctx)
	fmt.Println("left:", ch.Removed, "members:", ch.Members)
	fmt.Println("stop:", w.Stop(ctx))
	// Output:
	// at first: []
	// joined: [db-1] members: [db-1]
	// leave: <nil>
	// left: [db-1] members: []
	// stop: <nil>
}

package election_test

import (
	"context"
	"fmt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// clients starts n executors, each on a session of its own on srv, and
// returns them with a function that stops them.
func clients(srv *fakezk.Server, n int) ([]*executor.Executor, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var exs []*executor.Executor
	var done []chan struct{}
	for i := range n {
		ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: uint64(i + 1)})
		d := make(chan struct{})
		go func() { defer close(d); _ = ex.Run(ctx) }()
		exs = append(exs, ex)
		done = append(done, d)
	}
	return exs, func() {
		cancel()
		for _, d := range done {
			<-d
		}
	}
}

// Two candidates, each on its own session: a leads, b waits; when a steps
// down, b leads with a larger fencing token, and a's fenced writes are
// refused.
func Example() {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	exs, stop := clients(srv, 2)
	defer stop()
	ctx := context.Background()
	a, _ := election.New("/app/election", election.WithData([]byte("a")))
	b, _ := election.New("/app/election", election.WithData([]byte("b")))

	la, err := election.ClientOf(exs[0], a).Campaign(ctx)
	fmt.Println("a leads:", err, la.IsLeader())
	who, _ := election.ClientOf(exs[1], b).Leader(ctx)
	fmt.Printf("leader's data: %s\n", who)

	won := make(chan *election.Leadership)
	go func() {
		lb, _ := election.ClientOf(exs[1], b).Campaign(ctx)
		won <- lb
	}()
	fmt.Println("a steps down:", election.ClientOf(exs[0], nil).Resign(ctx, la), la.Err())
	<-la.Done()
	lb := <-won
	fmt.Println("b leads with a larger token:", lb.IsLeader(), lb.Token() > la.Token())

	_, err = executor.Await(ctx, exs[1], lb.Fenced(&task.CreateRequest{Path: "/app/config", Data: []byte("by b"), Mode: task.Persistent}))
	fmt.Println("b's fenced write:", err)
	_, err = executor.Await(ctx, exs[0], la.Fenced(&task.SetDataRequest{Path: "/app/config", Data: []byte("by a"), Version: task.AnyVersion}))
	fmt.Println("a's fenced write refused:", err != nil)
	fmt.Println("b steps down:", election.ClientOf(exs[1], nil).Resign(ctx, lb))
	// Output:
	// a leads: <nil> true
	// leader's data: a
	// a steps down: <nil> election: resigned
	// b leads with a larger token: true true
	// b's fenced write: <nil>
	// a's fenced write refused: true
	// b steps down: <nil>
}

// The /master pattern as a task chain: the first to create the node is
// master; the other learns who is.
func ExampleMaster() {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	exs, stop := clients(srv, 2)
	defer stop()
	ctx := context.Background()
	m1, _ := election.NewMaster("/service/master", election.WithData([]byte("host-1")))
	m2, _ := election.NewMaster("/service/master", election.WithData([]byte("host-2")))

	l1, err := executor.Await(ctx, exs[0], m1.Campaign())
	fmt.Println("host-1 is master:", err, l1.State())
	who, _ := executor.Await(ctx, exs[1], m2.Leader())
	fmt.Printf("host-2 sees master %s\n", who)
	_, err = executor.Await(ctx, exs[0], l1.Resign())
	fmt.Println("host-1 resigns:", err, l1.State())
	l2, err := executor.Await(ctx, exs[1], m2.Campaign())
	fmt.Println("host-2 is master:", err, l2.IsLeader())
	// Output:
	// host-1 is master: <nil> leading
	// host-2 sees master host-1
	// host-1 resigns: <nil> ended
	// host-2 is master: <nil> true
}

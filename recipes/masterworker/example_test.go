package masterworker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// The blocking API: a master, two workers and a client, each on a session
// of its own (here on an in-memory ZooKeeper); the client submits tasks
// and waits for their status.
func Example() {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ctx, stop := context.WithCancel(context.Background())
	var running []chan struct{}
	start := func(f func(*executor.Executor)) *executor.Executor {
		ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{})})
		done := make(chan struct{})
		go func() { defer close(done); _ = ex.Run(ctx) }()
		running = append(running, done)
		if f != nil {
			running = append(running, goDone(func() { f(ex) }))
		}
		return ex
	}
	defer func() {
		stop()
		for _, d := range running {
			<-d
		}
	}()

	sys, _ := masterworker.New("/app/jobs")
	master, _ := sys.Master("master-1")
	start(func(ex *executor.Executor) { _ = master.Serve(ctx, ex) })
	shout := func(j masterworker.Job) task.Task[[]byte] {
		if len(j.Data) == 0 {
			return task.Fail[[]byte](errors.New("nothing to shout"))
		}
		return task.Value([]byte(strings.ToUpper(string(j.Data))))
	}
	for _, id := range []string{"worker-a", "worker-b"} {
		w, _ := sys.Worker(id, shout)
		start(func(ex *executor.Executor) { _ = w.Serve(ctx, ex) })
	}

	client, _ := sys.NewClient(start(nil), "client-1")
	for _, data := range []string{"hello", "world", ""} {
		res, err := client.Do(ctx, []byte(data))
		fmt.Printf("%q -> %q failed=%v err=%v\n", data, res.Data, res.Failed, err)
	}
	// Output:
	// "hello" -> "HELLO" failed=false err=<nil>
	// "world" -> "WORLD" failed=false err=<nil>
	// "" -> "nothing to shout" failed=true err=<nil>
}

func goDone(f func()) chan struct{} {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	return done
}

// The task API under simulation: Submit and Wait are tasks, composed
// with the combinators; the world's clients are a master, a worker and a
// client, driven step by step on one goroutine.
func ExampleSystem_Submit() {
	w, _ := sim.New(sim.Config{Seed: 1, Clients: 3})
	defer w.Close()
	sys, _ := masterworker.New("/jobs")
	m, _ := sys.Master("m")
	wk, _ := sys.Worker("w", func(j masterworker.Job) task.Task[[]byte] {
		return task.Value(append([]byte("done: "), j.Data...))
	})
	sim.Submit(w, 0, m.Run())
	sim.Submit(w, 1, wk.Run())

	res, err := sim.Run(w, 2, c.Then(sys.Submit("client-7_1", []byte("report")), sys.Wait))
	fmt.Println(string(res.Data), err)
	fmt.Println("left in /tasks:", len(w.Children("/jobs/tasks")), "statuses:", len(w.Children("/jobs/status")))
	// Output:
	// done: report <nil>
	// left in /tasks: 0 statuses: 1
}

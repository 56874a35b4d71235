package config_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/config"
	"github.com/zkflow/zkflow/task"
)

// A reader follows a directory of entries; writers update it in one multi
// and under the invalid marker; the reader sees only complete versions.
func ExampleWatchDir() {
	srv := fakezk.New(fakezk.Config{})
	reader, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
	writer, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 2})
	defer reader.Shutdown()
	defer writer.Shutdown()
	run := func() {
		for reader.RunUntilIdle()+writer.RunUntilIdle() > 0 {
		}
	}
	write := func(t task.Task[task.Unit]) {
		executor.Submit(writer, t, func(_ task.Unit, err error) {
			if err != nil {
				fmt.Println("write:", err)
			}
		})
		run()
	}
	executor.Submit(writer, task.Create("/db", nil, task.Persistent), nil)
	write(config.Update("/db", map[string][]byte{"host": []byte("10.0.0.1"), "port": []byte("5432")}))

	executor.Submit(reader, config.WatchDir("/db", config.DirOptions{Marker: true}, func(s config.Snapshot) {
		fmt.Printf("host=%s port=%s\n", s.Values["host"], s.Values["port"])
	}), nil)
	run()
	write(config.Update("/db", map[string][]byte{"host": []byte("10.0.0.2"), "port": []byte("5433")}))
	write(config.UpdateMarked("/db", map[string][]byte{"host": []byte("10.0.0.3"), "port": []byte("6432")}))
	// Output:
	// host=10.0.0.1 port=5432
	// host=10.0.0.2 port=5433
	// host=10.0.0.3 port=6432
}

// A component that reloads itself: each version cancels the run of the
// previous one and starts a new run.
func ExampleReload() {
	srv := fakezk.New(fakezk.Config{})
	ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
	defer ex.Shutdown()
	run := func() {
		for ex.RunUntilIdle() > 0 {
		}
	}
	executor.Submit(ex, task.Create("/worker", nil, task.Persistent), nil)
	executor.Submit(ex, config.Update("/worker", map[string][]byte{"threads": []byte("4")}), nil)
	run()
	serve := func(s config.Snapshot) task.Task[task.Unit] {
		return func(sc *task.Scope, k task.Cont[task.Unit]) {
			fmt.Printf("serving with %s threads\n", s.Values["threads"])
			sc.OnDone(func(err error) { fmt.Printf("stopped %s-thread run: %v\n", s.Values["threads"], err) })
			task.Suspend(sc, k, func(task.Cont[task.Unit]) func() { return nil }) // runs until canceled
		}
	}
	var r *config.Reloader
	executor.Submit(ex, config.Reload("/worker", config.DirOptions{}, serve), func(v *config.Reloader, err error) { r = v })
	run()
	executor.Submit(ex, config.Update("/worker", map[string][]byte{"threads": []byte("8")}), nil)
	run()
	executor.Submit(ex, r.Stop(), nil)
	run()
	// Output:
	// serving with 4 threads
	// stopped 4-thread run: config: reloaded with a new configuration
	// serving with 8 threads
	// stopped 8-thread run: config: stopped
}

// The blocking API: one Client per configuration root. A writer's Update
// creates the root; a reader's Next returns the latest whole version.
func ExampleClient() {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ctx, stop := context.WithCancel(context.Background())
	var running sync.WaitGroup
	defer func() { stop(); running.Wait() }()
	client := func(seed uint64) *config.Client {
		ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: seed})
		running.Add(1)
		go func() { defer running.Done(); _ = ex.Run(ctx) }()
		c, _ := config.NewClient(ex, "/app/config")
		return c
	}
	reader, writer := client(1), client(2)

	fmt.Println("update:", writer.Update(ctx, map[string][]byte{"db": []byte("db1:5432"), "pool": []byte("10")}))
	r, _ := reader.WatchDir(ctx, config.DirOptions{})
	s, _ := r.Next(ctx)
	fmt.Printf("db=%s pool=%s\n", s.Values["db"], s.Values["pool"])
	fmt.Println("update:", writer.Update(ctx, map[string][]byte{"db": []byte("db2:5432"), "pool": []byte("20")}))
	s, _ = r.Next(ctx)
	fmt.Printf("db=%s pool=%s\n", s.Values["db"], s.Values["pool"])
	fmt.Println("stop:", r.Stop(ctx))
	// Output:
	// update: <nil>
	// db=db1:5432 pool=10
	// update: <nil>
	// db=db2:5432 pool=20
	// stop: <nil>
}

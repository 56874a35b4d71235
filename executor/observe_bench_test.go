package executor_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// BenchmarkOp is one operation through the executor and an automatic-mode
// fake: a flow that sends one exists, with and without an Observer (the
// observed one with every callback set, doing nothing).
func BenchmarkOp(b *testing.B) {
	b.Run("unobserved", func(b *testing.B) { benchOp(b, nil) })
	b.Run("observed", func(b *testing.B) {
		benchOp(b, &task.Observer{
			OnFlowStart: func(task.FlowInfo) any { return nil },
			OnFlowEnd:   func(task.FlowDone) {},
			OnOpStart:   func(task.OpInfo) any { return nil },
			OnOpEnd:     func(task.OpDone) {},
		})
	})
}

func benchOp(b *testing.B, obs *task.Observer) {
	srv := fakezk.New(fakezk.Config{})
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1, Observer: obs})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ex.Shutdown)
	ex.RunUntilIdle()
	exists := task.Exists("/")
	n := 0
	k := func(st *task.Stat, err error) {
		if err != nil || st == nil {
			b.Fatal(err)
		}
		n++
	}
	for b.Loop() {
		executor.Submit(ex, exists, k)
		ex.RunUntilIdle()
	}
	if n == 0 {
		b.Fatal("no operation ran")
	}
}

// BenchmarkWatchOp is a watch's whole life through the executor and an
// automatic-mode fake: a flow that sends a watched exists on a node, sets
// the node's data (which fires the watch) and waits for the event.
//
//	go test -run '^$' -bench BenchmarkWatchOp -benchmem ./executor
func BenchmarkWatchOp(b *testing.B) {
	srv := fakezk.New(fakezk.Config{})
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ex.Shutdown)
	var created error = errors.New("not run")
	executor.Submit(ex, task.Create("/w", nil, task.Persistent), func(_ string, err error) { created = err })
	ex.RunUntilIdle()
	if created != nil {
		b.Fatal(created)
	}
	existsW, set := task.ExistsW("/w"), task.Set("/w", nil, -1)
	watched := task.Task[task.Event](func(s *task.Scope, k task.Cont[task.Event]) {
		task.Run(s, existsW, func(sw task.StatWatch, err error) {
			if err != nil {
				k(task.Event{}, err)
				return
			}
			task.Run(s, set, func(_ task.Stat, err error) {
				if err != nil {
					k(task.Event{}, err)
					return
				}
				task.Run(s, sw.Watch.Wait(), k)
			})
		})
	})
	n := 0
	k := func(ev task.Event, err error) {
		if err != nil || ev.Type != task.EventNodeDataChanged {
			b.Fatal(ev, err)
		}
		n++
	}
	for b.Loop() {
		executor.Submit(ex, watched, k)
		ex.RunUntilIdle()
	}
	if n == 0 {
		b.Fatal("no watch fired")
	}
}

// BenchmarkFailedOp is one operation that fails, through the executor and
// an automatic-mode fake: a flow that gets a missing node (an *OpError
// wrapping task.ErrNoNode).
//
//	go test -run '^$' -bench BenchmarkFailedOp -benchmem ./executor
func BenchmarkFailedOp(b *testing.B) {
	srv := fakezk.New(fakezk.Config{})
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ex.Shutdown)
	ex.RunUntilIdle()
	get := task.Get("/missing")
	n := 0
	k := func(_ task.Data, err error) {
		if !errors.Is(err, task.ErrNoNode) {
			b.Fatal(err)
		}
		n++
	}
	for b.Loop() {
		executor.Submit(ex, get, k)
		ex.RunUntilIdle()
	}
	if n == 0 {
		b.Fatal("no operation ran")
	}
}

// BenchmarkOpPerCall is one getData through the executor and an
// automatic-mode fake with the task built on every call (task.Get(path)),
// as recipes build theirs.
//
//	go test -run '^$' -bench BenchmarkOpPerCall -benchmem ./executor
func BenchmarkOpPerCall(b *testing.B) {
	srv := fakezk.New(fakezk.Config{})
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ex.Shutdown)
	ex.RunUntilIdle()
	n := 0
	k := func(_ task.Data, err error) {
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
	for b.Loop() {
		executor.Submit(ex, task.Get("/"), k)
		ex.RunUntilIdle()
	}
	if n == 0 {
		b.Fatal("no operation ran")
	}
}

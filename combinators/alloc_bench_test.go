package combinators_test

import (
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

func newAllocExecutor(b *testing.B) (*executor.Executor, *fakezk.Clock) {
	clk := fakezk.NewClock(time.Unix(0, 0))
	srv := fakezk.New(fakezk.Config{Clock: clk})
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ex.Shutdown)
	ex.RunUntilIdle()
	return ex, clk
}

// BenchmarkAll is All of two synchronous tasks, run in a flow's scope.
func BenchmarkAll(b *testing.B) {
	ex, _ := newAllocExecutor(b)
	t := c.All(task.Value(1), task.Value(2))
	s := ex.SessionScope()
	k := func(vs []int, err error) {
		if err != nil || len(vs) != 2 {
			b.Fatal(vs, err)
		}
	}
	for b.Loop() {
		task.Run(s, t, k)
	}
}

// BenchmarkAllOps is All of a sync and an exists, as a read after a
// sync is made, through the executor and the fake.
func BenchmarkAllOps(b *testing.B) {
	ex, _ := newAllocExecutor(b)
	t := c.All(c.Map(task.Sync("/"), func(task.Unit) *task.Stat { return nil }), task.Exists("/"))
	n := 0
	k := func(vs []*task.Stat, err error) {
		if err != nil || vs[1] == nil {
			b.Fatal(vs, err)
		}
		n++
	}
	for b.Loop() {
		executor.Submit(ex, t, k)
		ex.RunUntilIdle()
	}
	if n == 0 {
		b.Fatal("no run ended")
	}
}

// BenchmarkSleep is a flow that sleeps, the clock moved past its end.
func BenchmarkSleep(b *testing.B) {
	ex, clk := newAllocExecutor(b)
	t := c.Sleep(time.Second)
	n := 0
	k := func(_ task.Unit, err error) {
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
	for b.Loop() {
		executor.Submit(ex, t, k)
		ex.RunUntilIdle()
		clk.Advance(time.Second)
		ex.RunUntilIdle()
	}
	if n == 0 {
		b.Fatal("no sleep ended")
	}
}

// BenchmarkWatchWait is a watch set, then waited on, then fired by a
// write made while the wait is parked: the wait's record, the re-read
// timer its wait arms and the event's stop of that timer.
func BenchmarkWatchWait(b *testing.B) {
	ex, _ := newAllocExecutor(b)
	executor.Submit(ex, task.Create("/w", nil, task.Persistent), nil)
	ex.RunUntilIdle()
	existsW, set := task.ExistsW("/w"), task.Set("/w", nil, -1)
	setK := func(task.Stat, error) {} // canceled: the flow ends with the event, before the reply
	watched := task.Task[task.Event](func(s *task.Scope, k task.Cont[task.Event]) {
		task.Run(s, existsW, func(sw task.StatWatch, err error) {
			if err != nil {
				k(task.Event{}, err)
				return
			}
			task.Run(s, sw.Watch.Wait(), k)
			task.Run(s, set, setK)
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
		b.Fatal("no wait ended")
	}
}

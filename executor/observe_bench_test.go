package executor_test

import (
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

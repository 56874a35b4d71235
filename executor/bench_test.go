package executor_test

import (
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

func newBenchExecutor(b *testing.B) *executor.Executor {
	ex, err := executor.New(executor.Config{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ex.Shutdown)
	return ex
}

// BenchmarkStep is one job through the executor: queued on the task queue
// and run by Step.
func BenchmarkStep(b *testing.B) {
	ex := newBenchExecutor(b)
	n := 0
	job := func() { n++ }
	for b.Loop() {
		ex.Schedule(job)
		ex.Step()
	}
	if n == 0 {
		b.Fatal("no job ran")
	}
}

// BenchmarkNoopStep is one synchronous no-op step of a running chain:
// a Loop iteration whose body is a prebuilt task, through Run's step
// boundary and trampoline. b.N iterations run in one flow.
func BenchmarkNoopStep(b *testing.B) {
	ex := newBenchExecutor(b)
	// b.N rather than b.Loop: the iterations are the Loop's, not ours.
	n, count := b.N, 0
	step := task.Task[int](func(_ *task.Scope, k task.Cont[int]) {
		count++
		k(count, nil)
	})
	loop := c.Loop(0, func(i int) bool { return i < n }, func(int) task.Task[int] { return step })
	executor.Submit(ex, loop, nil)
	b.ResetTimer()
	ex.RunUntilIdle()
	if count != n {
		b.Fatalf("ran %d steps, want %d", count, n)
	}
}

// BenchmarkSubmit is a whole flow: Submit of a prebuilt task and its run.
func BenchmarkSubmit(b *testing.B) {
	ex := newBenchExecutor(b)
	t := task.Value(1)
	k := func(int, error) {}
	for b.Loop() {
		executor.Submit(ex, t, k)
		ex.RunUntilIdle()
	}
}

// BenchmarkThenChain runs a chain of 10 Thens per iteration (cost per op
// is the reported figure / 10).
func BenchmarkThenChain(b *testing.B) {
	ex := newBenchExecutor(b)
	inc := func(v int) task.Task[int] { return task.Value(v + 1) }
	t := task.Value(0)
	for range 10 {
		t = c.Then(t, inc)
	}
	s := ex.SessionScope()
	k := func(int, error) {}
	for b.Loop() {
		task.Run(s, t, k)
	}
}

// BenchmarkRetry is a Retry whose task fails once with a retryable error
// and then succeeds.
func BenchmarkRetry(b *testing.B) {
	ex := newBenchExecutor(b)
	fail := true
	flaky := task.Func(func(*task.Scope) (int, error) {
		fail = !fail
		if !fail {
			return 0, task.ErrNotSent
		}
		return 1, nil
	})
	t := c.Retry(flaky, c.Policy{Attempts: 3})
	s := ex.SessionScope()
	k := func(int, error) {}
	for b.Loop() {
		task.Run(s, t, k)
	}
}

// BenchmarkRetryPerCall is BenchmarkRetry with the Retry built on every
// call, as recipes build theirs (with the default errors, Policy.On
// empty).
func BenchmarkRetryPerCall(b *testing.B) {
	ex := newBenchExecutor(b)
	fail := true
	flaky := task.Func(func(*task.Scope) (int, error) {
		fail = !fail
		if !fail {
			return 0, task.ErrNotSent
		}
		return 1, nil
	})
	s := ex.SessionScope()
	k := func(int, error) {}
	for b.Loop() {
		task.Run(s, c.Retry(flaky, c.Policy{Attempts: 3}), k)
	}
}

// BenchmarkFork forks a no-op flow and runs it to completion.
func BenchmarkFork(b *testing.B) {
	ex := newBenchExecutor(b)
	t := c.Fork(task.Value(1), func(int, error) {})
	s := ex.SessionScope()
	k := func(task.Unit, error) {}
	for b.Loop() {
		task.Run(s, t, k)
		ex.RunUntilIdle()
	}
}

package task_test

import (
	"iter"
	"runtime"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// The costs of flows, stated in FLOWS.md: go test -run '^$' -bench 'Flow|Chain|Switch' -benchmem ./task/

const chainLen = 100

// asyncStep completes through the executor's task queue, as an
// operation's reply does.
var asyncStep = task.Task[int](func(s *task.Scope, k task.Cont[int]) { s.Schedule(func() { k(1, nil) }) })

var syncStep = task.Value(1)

// thenChain is n steps chained with Then, each adding the step's value.
func thenChain(step task.Task[int], n int) task.Task[int] {
	var from func(i, sum int) task.Task[int]
	from = func(i, sum int) task.Task[int] {
		if i == n {
			return task.Value(sum)
		}
		return c.Then(step, func(v int) task.Task[int] { return from(i+1, sum+v) })
	}
	return from(0, 0)
}

// flowChain is the same n steps awaited in a flow.
func flowChain(step task.Task[int], n int) task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		sum := 0
		for range n {
			v, err := task.Await(f, step)
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	})
}

// perStep runs t (a chain of chainLen steps) per iteration and reports
// the time and allocations per step.
func perStep(b *testing.B, t task.Task[int]) {
	ex, _ := executor.New(executor.Config{})
	defer ex.Shutdown()
	var got int
	k := func(v int, err error) {
		if err != nil {
			b.Fatal(err)
		}
		got = v
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuTime()
	for b.Loop() {
		executor.Submit(ex, t, k)
		ex.RunUntilIdle()
	}
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&ms1)
	if got != chainLen {
		b.Fatalf("sum %d, want %d", got, chainLen)
	}
	steps := float64(b.N) * chainLen
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/steps, "ns/step")
	b.ReportMetric(float64(cpu)/steps, "cpu-ns/step")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/steps, "allocs/step")
}

// The overhead of an Await is FlowAwait's ns/step minus ThenChain's, for
// a step that completes through the task queue (as operations do) and
// for a synchronous one.
func BenchmarkThenChainAsync(b *testing.B) { perStep(b, thenChain(asyncStep, chainLen)) }
func BenchmarkFlowAwaitAsync(b *testing.B) { perStep(b, flowChain(asyncStep, chainLen)) }
func BenchmarkThenChainSync(b *testing.B)  { perStep(b, thenChain(syncStep, chainLen)) }
func BenchmarkFlowAwaitSync(b *testing.B)  { perStep(b, flowChain(syncStep, chainLen)) }

// The cost to start a flow: FlowStart minus FuncStart (a flow and a
// plain task that both return at once, each submitted and run).
func BenchmarkFlowStart(b *testing.B) {
	startCost(b, task.Flow(func(*task.F) (int, error) { return 1, nil }))
}

func BenchmarkFuncStart(b *testing.B) {
	startCost(b, task.Func(func(*task.Scope) (int, error) { return 1, nil }))
}

func startCost(b *testing.B, t task.Task[int]) {
	ex, _ := executor.New(executor.Config{})
	defer ex.Shutdown()
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		executor.Submit(ex, t, nil)
		ex.RunUntilIdle()
	}
	reportCPU(b, cpu0)
}

// reportCPU reports the process's CPU time per iteration since cpu0:
// on a shared machine, steadier than ns/op (which counts the time the
// process waited for a core).
func reportCPU(b *testing.B, cpu0 int64) {
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// The memory of 100,000 flows suspended at once, each at an Await of a
// task that never ends: heap and goroutine stacks, in MiB, measured
// after a GC, less what was in use before.
func BenchmarkFlowSuspended100k(b *testing.B) {
	const n = 100_000
	forever := task.Task[int](func(s *task.Scope, k task.Cont[int]) {
		task.Suspend(s, k, func(task.Cont[int]) func() { return nil })
	})
	flow := task.Flow(func(f *task.F) (int, error) { return task.Await(f, forever) })
	var heap, stacks float64
	for b.Loop() {
		ex, _ := executor.New(executor.Config{OnError: func(error) {}})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range n {
			executor.Submit(ex, flow, nil)
		}
		ex.RunUntilIdle()
		runtime.GC()
		runtime.ReadMemStats(&after)
		if got := task.LiveBodies(ex); got != n {
			b.Fatalf("%d bodies suspended, want %d", got, n)
		}
		heap = float64(after.HeapInuse) - float64(before.HeapInuse)
		stacks = float64(after.StackInuse) - float64(before.StackInuse)
		ex.Shutdown()
	}
	const mib = 1 << 20
	b.ReportMetric(heap/mib, "heap-MiB")
	b.ReportMetric(stacks/mib, "stack-MiB")
	b.ReportMetric((heap+stacks)/mib, "total-MiB")
	b.ReportMetric((heap+stacks)/n, "B/flow")
}

// The two ways to run a body in lockstep, bare: a round trip through
// iter.Pull's coroutine switch, and one between two goroutines handing
// off on channels. Flows use the first.
func BenchmarkSwitchPull(b *testing.B) {
	next, stop := iter.Pull(func(yield func(int) bool) {
		for yield(1) {
		}
	})
	defer stop()
	cpu0 := cpuTime()
	for b.Loop() {
		next()
	}
	reportCPU(b, cpu0)
}

func BenchmarkSwitchChan(b *testing.B) {
	in, out := make(chan struct{}), make(chan struct{})
	go func() {
		for range in {
			out <- struct{}{}
		}
		close(out)
	}()
	cpu0 := cpuTime()
	for b.Loop() {
		in <- struct{}{}
		<-out
	}
	reportCPU(b, cpu0)
	close(in)
	<-out
}

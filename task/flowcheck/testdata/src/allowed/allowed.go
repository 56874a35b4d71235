// Package allowed holds code the analyzer must not report.
package allowed

import (
	"context"
	"sync"
	"time"

	"github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

var (
	ch = make(chan int, 1)
	mu sync.Mutex
	cl *lock.Client
)

// Awaits, computation, a select with a default case, non-blocking calls.
func flow() task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		sum := 0
		for i := range 10 {
			v, err := task.Await(f, task.Func(func() (int, error) { return i, nil }))
			if err != nil {
				return 0, err
			}
			sum += v
		}
		if _, err := task.Await(f, combinators.Sleep(time.Second)); err != nil {
			return 0, err
		}
		if _, err := task.Await(f, cl.LockTask("/l")); err != nil {
			return 0, err
		}
		_ = lock.Name("/l", context.Background())
		select {
		case v := <-ch:
			sum += v
		case ch <- sum:
		default:
		}
		d := time.Duration(sum) * time.Second
		_ = d.String()
		mu.Unlock()
		local := f
		_ = local
		s := struct{ f *task.F }{}
		s.f = f
		go report(sum) // a goroutine given a copy of a value
		return sum, compute(f)
	})
}

func report(int) {}

// A helper that passes the F on and computes.
func compute(f *task.F) error {
	_, err := task.Await(f, task.Func(func() (int, error) { return 1, nil }))
	return err
}

// Channels, clocks, locks and blocking APIs outside any flow body.
func notAFlow(ctx context.Context, e *executor.Executor) {
	v := <-ch
	ch <- v
	for range ch {
	}
	time.Sleep(time.Millisecond)
	<-ctx.Done()
	mu.Lock()
	mu.Unlock()
	executor.Await(ctx, e, task.Func(func() (int, error) { return 1, nil }))
	_ = e.Run(ctx)
	_ = cl.Lock(ctx, "/l")
}

// A goroutine started outside the body, which submits the flow.
func outside(ctx context.Context, e *executor.Executor) {
	t := flow()
	go func() {
		executor.Await(ctx, e, t)
		<-ch
	}()
}

// A function literal that is not a flow body, though it takes a *task.F.
func notABody() func(*task.F) (int, error) {
	return func(f *task.F) (int, error) {
		return <-ch, nil
	}
}

// The advice for a wait: wrap it in a Task (task.Suspend) whose goroutine
// waits and hands resume to executor.Submit, which calls it on the
// executor. The executor and the channel are captured, never changed (C3).
func suspendInline(ex *executor.Executor, in <-chan int) task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		return task.Await(f, task.Task[int](func(s *task.Scope, k task.Cont[int]) {
			task.Suspend(s, k, func(resume task.Cont[int]) func() {
				go func() {
					v := <-in
					executor.Submit(ex, task.Value(v), resume)
				}()
				go func() {
					v := <-in
					executor.SubmitWith(ex, task.Value(v), executor.Options{}, func(v int, err error) { resume(v, err) })
				}()
				return nil
			})
		}))
	})
}

var lastErr error

// Non-blocking calls of package executor that take a context, a body held
// in a local variable that awaits with its own F, and a result computed
// with the F (not the F) stored outside.
func moreAllowed(ctx context.Context, e *executor.Executor) task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		e.CloseWhenDone(ctx)
		_ = e.Named("x", ctx)
		step := func(g *task.F) (int, error) {
			return task.Await(g, task.Func(func() (int, error) { return 0, nil }))
		}
		lastErr = compute(f)
		h := struct{ n int }{1}
		_ = h
		return task.Await(f, task.Flow(step))
	})
}

// A goroutine that reads what the body captures and never changes (a map
// it is given, a count set before the body), and sends on a channel.
func capturedReadOnly(names map[string]int, out chan<- int) task.Task[int] {
	total := 0
	total = len(names)
	return task.Flow(func(f *task.F) (int, error) {
		go func() { out <- names["a"] + total }()
		return total, nil
	})
}

type request struct {
	f    *task.F
	data []byte
	ctx  context.Context
}

var (
	lastData []byte
	lastCtx  context.Context
)

// Parts of a value that holds the F whose types cannot hold one.
func partsWithoutF(ctx context.Context) task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		r := &request{f: f, data: []byte("x"), ctx: ctx}
		lastData = r.data
		lastCtx = r.ctx
		return len(r.data), nil
	})
}

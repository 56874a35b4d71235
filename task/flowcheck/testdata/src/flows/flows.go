// Package flows holds flow bodies that break each rule; every finding is
// marked with the message it must get.
package flows

import (
	"context"
	"sync"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

var (
	ch    = make(chan int, 1)
	saved *task.F
	ex    *executor.Executor
	mu    sync.Mutex
	rw    sync.RWMutex
	wg    sync.WaitGroup
	cond  = sync.NewCond(&mu)
	cl    *lock.Client
	state struct{ f *task.F }
	hook  func()
)

func channels() task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		v := <-ch     // want `^flow body receives from a channel: a flow suspends only at task.Await; wrap the wait in a Task \(task.Suspend\) and await it$`
		v, ok := <-ch // want `flow body receives from a channel`
		_ = ok
		ch <- v             // want `flow body sends on a channel`
		for x := range ch { // want `flow body ranges over a channel`
			v += x
		}
		select { // want `flow body blocks in a select without a default case`
		case v = <-ch:
		case ch <- 1:
		}
		select {} // want `flow body blocks in a select without a default case`
		return v, nil
	})
}

func selectDefaultCaseBody() task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		select {
		case v := <-ch:
			ch <- v // want `flow body sends on a channel`
		case ch <- <-ch: // want `flow body receives from a channel`
		default:
		}
		return 0, nil
	})
}

func clocks(ctx context.Context) task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		time.Sleep(time.Second)           // want `flow body calls time.Sleep: a flow suspends only at task.Await, on the executor's clock`
		<-time.After(time.Second)         // want `flow body calls time.After:`
		<-time.Tick(time.Second)          // want `flow body calls time.Tick:`
		t := time.NewTimer(time.Second)   // want `flow body calls time.NewTimer:`
		<-t.C                             // want `flow body receives from a channel`
		tk := time.NewTicker(time.Second) // want `flow body calls time.NewTicker:`
		tk.Stop()
		time.AfterFunc(time.Second, func() {}) // want `flow body calls time.AfterFunc: its function runs on another goroutine`
		<-ctx.Done()                           // want `flow body waits on a context's Done channel`
		return 0, nil
	})
}

func syncs() task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		mu.Lock() // want `flow body calls sync.Mutex.Lock: a flow suspends only at task.Await, and its state needs no lock`
		mu.Unlock()
		rw.Lock()  // want `flow body calls sync.RWMutex.Lock:`
		rw.RLock() // want `flow body calls sync.RWMutex.RLock:`
		wg.Wait()  // want `flow body calls sync.WaitGroup.Wait:`
		wg.Go(func() {})
		cond.Wait() // want `flow body calls sync.Cond.Wait:`
		var l sync.Locker = &mu
		l.Lock() // want `flow body calls sync.Locker.Lock:`
		return 0, nil
	})
}

func blockingAPIs(ctx context.Context, b lock.Blocking) task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		executor.Await(ctx, ex, task.Func(func() (int, error) { return 1, nil })) // want `flow body calls executor.Await: it waits for an executor to run a task, and this flow runs on one; use task.Await\(f, t\)`
		executor.AwaitAcrossExpiry[int](ctx, ex, nil)                             // want `flow body calls executor.AwaitAcrossExpiry:`
		ex.Run(ctx)                                                               // want `flow body calls executor.Executor.Run: it runs an executor on this goroutine`
		cl.Lock(ctx, "/l")                                                        // want `flow body calls lock.Client.Lock, a blocking recipe call: .*await the recipe's Task face`
		lock.Open(ctx)                                                            // want `flow body calls lock.Open, a blocking recipe call`
		b.Unlock(ctx)                                                             // want `flow body calls lock.Blocking.Unlock, a blocking recipe call`
		return 0, nil
	})
}

func goroutines() task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		n := 0
		go func() { n++ }() // want `flow body starts a goroutine that uses the flow's state \(n\)`
		go work(&n)         // want `flow body starts a goroutine that uses the flow's state \(n\)`
		go func() {         // want `flow body passes its \*task.F \(f\) to a goroutine`
			task.Await(f, task.Func(func() (int, error) { return 0, nil }))
		}()
		go useF(f)            // want `flow body passes its \*task.F \(f\) to a goroutine`
		wg.Go(func() { n++ }) // want `flow body starts a goroutine \(sync.WaitGroup.Go\) that uses the flow's state \(n\)`
		wg.Go(func() { <-ch })
		return n, nil
	})
}

func work(n *int) {}

func useF(f *task.F) {}

func escapes() task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		saved = f       // want `flow body stores its \*task.F in saved, which outlives the body`
		state.f = f     // want `flow body stores its \*task.F in state, which outlives the body`
		hook = func() { // want `flow body stores its \*task.F in hook, which outlives the body`
			task.Await(f, task.Func(func() (int, error) { return 0, nil }))
		}
		local := f
		_ = local
		return 0, nil
	})
}

// Another flow's F, awaited from a flow started inside.
func nested() task.Task[int] {
	return task.Flow(func(outer *task.F) (int, error) {
		inner := task.Flow(func(f *task.F) (int, error) {
			return task.Await(outer, task.Func(func() (int, error) { return 0, nil })) // want `flow body uses outer, a \*task.F declared outside it`
		})
		<-ch // want `flow body receives from a channel`
		return task.Await(outer, inner)
	})
}

func storedF() task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		return task.Await(saved, task.Func(func() (int, error) { return 0, nil })) // want `flow body uses saved, a \*task.F declared outside it`
	})
}

// Closures the body defines and calls are part of it; so are deferred ones.
func closures() task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		wait := func() int {
			return <-ch // want `flow body receives from a channel`
		}
		defer func() {
			mu.Lock() // want `flow body calls sync.Mutex.Lock`
		}()
		return wait(), nil
	})
}

// A named function as the body, and helpers of this package it calls,
// directly or through other helpers and methods.
func named() task.Task[int] { return task.Flow(namedBody) }

func namedBody(f *task.F) (int, error) {
	time.Sleep(time.Millisecond) // want `flow body calls time.Sleep`
	return helper(f), nil
}

func helper(f *task.F) int {
	var w waiter
	return w.wait() + generic[int](f)
}

type waiter struct{ f *task.F }

func (w *waiter) wait() int {
	return <-ch // want `flow body \(through helper → waiter.wait\) receives from a channel`
}

func generic[T any](f *task.F) T {
	var zero T
	wg.Wait() // want `flow body \(through helper → generic\) calls sync.WaitGroup.Wait`
	return zero
}

// A helper that stores the F it was given, through its receiver.
func methodBody() task.Task[int] {
	var w waiter
	return task.Flow(w.body)
}

func (w *waiter) body(f *task.F) (int, error) {
	w.f = f // want `flow body stores its \*task.F in w, which outlives the body`
	return 0, nil
}

// A helper reached from two flows is reported once.
func twice() (task.Task[int], task.Task[int]) {
	return task.Flow(func(f *task.F) (int, error) { return shared(), nil }),
		task.Flow(func(f *task.F) (int, error) { return shared(), nil })
}

func shared() int {
	ch <- 1 // want `flow body \(through shared\) sends on a channel`
	return 0
}

// A finding its author has judged (a test of the runtime's refusal, say)
// is silenced by a //flowcheck:allow comment on its line or the line above.
func silenced(ctx context.Context) task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		//flowcheck:allow the test checks that the executor refuses this
		executor.Await(ctx, ex, task.Func(func() (int, error) { return 1, nil }))
		<-ch //flowcheck:allow
		<-ch // want `flow body receives from a channel`
		return 0, nil
	})
}

// Flow instantiated explicitly, its body in parentheses.
func instantiated() task.Task[int] {
	return task.Flow[int]((func(f *task.F) (int, error) {
		return <-ch, nil // want `flow body receives from a channel`
	}))
}

// A goroutine given a copy of a struct that holds a pointer shares it.
type counter struct {
	name string
	n    *int
}

func sharedCopy() task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		n := 0
		p := counter{"n", &n}
		go func(q counter) {}(p) // want `flow body starts a goroutine that uses the flow's state \(p\)`
		return n, nil
	})
}

// A step closure in the body runs on the executor too.
func stepClosure() task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		return task.Await(f, task.Func(func() (int, error) {
			return <-ch, nil // want `flow body receives from a channel`
		}))
	})
}

// A body given to another function of package task, in another position.
func otherEntry() task.Task[int] {
	return task.FlowNamed("wait", func(f *task.F) (int, error) {
		return <-ch, nil // want `flow body receives from a channel`
	})
}

// The executor's blocking operations (executor.Await of an operation's
// task) and any other exported function of package executor that takes a
// context first (D4).
func executorOps(ctx context.Context) task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		ex.Get(ctx, "/a")            // want `^flow body calls executor.Executor.Get: it waits for an executor to run task.Get, and this flow runs on one; use task.Await\(f, task.Get\(\.\.\.\)\)$`
		ex.Set(ctx, "/a", nil, -1)   // want `flow body calls executor.Executor.Set: it waits for an executor to run task.Set,`
		ex.Create(ctx, "/a", nil, 0) // want `flow body calls executor.Executor.Create: it waits for an executor to run task.Create,`
		ex.Delete(ctx, "/a", -1)     // want `flow body calls executor.Executor.Delete: it waits for an executor to run task.Delete,`
		ex.Children(ctx, "/a")       // want `flow body calls executor.Executor.Children: it waits for an executor to run task.Children,`
		ex.Exists(ctx, "/a")         // want `flow body calls executor.Executor.Exists: it waits for an executor to run task.Exists,`
		ex.Multi(ctx, 1, 2)          // want `flow body calls executor.Executor.Multi: it waits for an executor to run task.Multi,`
		ex.Sync(ctx, "/a")           // want `flow body calls executor.Executor.Sync: it waits for an executor to run task.Sync,`
		executor.Drain(ctx, ex)      // want `^flow body calls executor.Drain, a blocking executor call: an executor function that takes a context blocks until it is done \(it waits for an executor, and this flow runs on one\); await a Task with task.Await\(f, t\)$`
		return 0, nil
	})
}

// A body held in a local variable is a body of its own: awaiting with the
// F of the flow around it is using another flow's F (D5).
func nestedLocal() task.Task[int] {
	return task.Flow(func(outer *task.F) (int, error) {
		step := func(g *task.F) (int, error) {
			return task.Await(outer, task.Func(func() (int, error) { return 0, nil })) // want `flow body uses outer, a \*task.F declared outside it`
		}
		return task.Await(outer, task.Flow(step))
	})
}

// A body held in a local variable outside any flow is checked too.
func localBody() task.Task[int] {
	body := func(f *task.F) (int, error) {
		return <-ch, nil // want `flow body receives from a channel`
	}
	return task.Flow(body)
}

var (
	later func()
	kept  *holder
	kept2 holder
)

type holder struct{ f *task.F }

func newHolder(f *task.F) (*holder, error) { return &holder{f: f}, nil }

// An F escapes in a closure, or a struct, first held in a local variable
// (D6, D7).
func escapesThroughLocals() task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		again := func() {
			task.Await(f, task.Func(func() (int, error) { return 0, nil }))
		}
		later = again // want `flow body stores its \*task.F in later, which outlives the body`
		h := &holder{f: f}
		kept = h // want `flow body stores its \*task.F in kept, which outlives the body`
		h2 := h
		kept = h2 // want `flow body stores its \*task.F in kept, which outlives the body`
		var v holder
		v.f = f
		kept2 = v // want `flow body stores its \*task.F in kept2, which outlives the body`
		h3, err := newHolder(f)
		kept = h3 // want `flow body stores its \*task.F in kept, which outlives the body`
		bx := struct{ h *holder }{h: h3}
		kept = bx.h // want `flow body stores its \*task.F in kept, which outlives the body`
		return 0, err
	})
}

// State the body captures from the function around it is the body's state
// when the body changes it (C2).
func capturedState() task.Task[int] {
	n := 0
	m := map[string]int{}
	return task.Flow(func(f *task.F) (int, error) {
		go func() { n++ }()        // want `flow body starts a goroutine that uses the flow's state \(n\)`
		go func() { _ = m["a"] }() // want `flow body starts a goroutine that uses the flow's state \(m\)`
		go work(&n)                // want `flow body starts a goroutine that uses the flow's state \(n\)`
		m["a"] = 1
		return n, nil
	})
}

type tally struct{ n int }

func (t *tally) add() { t.n++ }

// A pointer method called on a captured value changes it.
func capturedValueMethod() task.Task[int] {
	var t tally
	return task.Flow(func(f *task.F) (int, error) {
		go func() { _ = t.n }() // want `flow body starts a goroutine that uses the flow's state \(t\)`
		t.add()
		return 0, nil
	})
}

// A goroutine that calls resume itself calls it off the executor.
func resumeOffExecutor(in <-chan int) task.Task[int] {
	return task.Flow(func(f *task.F) (int, error) {
		return task.Await(f, task.Task[int](func(s *task.Scope, k task.Cont[int]) {
			task.Suspend(s, k, func(resume task.Cont[int]) func() {
				go func() { // want `flow body starts a goroutine that uses the flow's state \(resume\)`
					resume(<-in, nil)
				}()
				return nil
			})
		}))
	})
}

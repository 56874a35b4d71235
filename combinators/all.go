package combinators

import "github.com/zkflow/zkflow/task"

// All runs every task of ts together (each starts when the previous one
// waits) in a child scope and succeeds with their values, in the order of
// ts. The first error ends All at once: the others are canceled (their late
// results dropped, their cleanups run) and that error is All's.
func All[T any](ts ...task.Task[T]) task.Task[[]T] {
	return func(s *task.Scope, k task.Cont[[]T]) {
		a := &allRun[T]{ts: ts}
		task.RunIn(s.Child(), a.start, k)
	}
}

// allRun is one run of All: its state, shared by the continuations of
// its tasks (one per task, which knows its index).
type allRun[T any] struct {
	ts        []task.Task[T]
	k         task.Cont[[]T]
	results   []T
	remaining int
	failed    bool
	// buf holds the results of up to two tasks (the results slice is
	// then made with the run, in one allocation).
	buf [2]T
}

func (a *allRun[T]) start(c *task.Scope, k task.Cont[[]T]) {
	n := len(a.ts)
	if n <= len(a.buf) {
		a.results = a.buf[:n:n]
	} else {
		a.results = make([]T, n)
	}
	a.remaining = n
	if n == 0 {
		k(a.results, nil)
		return
	}
	a.k = k
	for i, t := range a.ts {
		task.Run(c, t, func(v T, err error) { a.done(i, v, err) })
		if a.failed {
			return
		}
	}
}

// done takes the outcome of task i.
func (a *allRun[T]) done(i int, v T, err error) {
	if a.failed || a.remaining == 0 {
		return
	}
	if err != nil {
		a.failed = true
		a.k(nil, err)
		return
	}
	a.results[i] = v
	a.remaining--
	if a.remaining == 0 {
		a.k(a.results, nil)
	}
}

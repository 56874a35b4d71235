package task

import "fmt"

// Task is a description of a step of work that produces a T. Running it
// starts the work in Scope s; when the work ends, the task calls k exactly
// once, with a value or an error. Running a task twice does the work twice:
// a Task is a recipe, not a running computation (that is what lets Retry
// run it again).
//
// A task body must not block: it starts asynchronous work (through the
// Scope) and returns. It runs on the executor goroutine, and so does k.
// Combinators start tasks with Run and call continuations with Resume, which
// check the scope and trampoline through the executor so that a long chain
// of synchronous steps does not grow the stack.
type Task[T any] func(s *Scope, k Cont[T])

// Cont is a continuation: it receives a task's outcome. It is called exactly
// once, on the executor goroutine.
type Cont[T any] func(v T, err error)

// maxDepth bounds how deeply synchronous steps may nest on the stack before
// the next one is bounced through the executor's task queue.
const maxDepth = 64

// ErrNilTask is the error of running a nil Task.
var ErrNilTask error = fmt.Errorf("%w: nil task", ErrInvalidArgument)

// Run starts t in s with continuation k, at a step boundary: if s is already
// done (deadline passed, canceled, session expired) t does not start and k
// receives s.Err(); a nil t gives ErrNilTask. Run calls t directly while the
// stack is shallow and otherwise schedules it on the executor's task queue
// (trampolining), so it never grows the stack without bound.
func Run[T any](s *Scope, t Task[T], k Cont[T]) {
	if s.err != nil || t == nil {
		err := s.err
		if err == nil {
			err = ErrNilTask
		}
		var zero T
		Resume(s, k, zero, err)
		return
	}
	if invariants {
		k = once(k)
	}
	d := s.depth
	if *d < maxDepth {
		*d++
		t(s, k)
		*d--
		return
	}
	s.env.rt.Schedule(func() { Run(s, t, k) })
}

// ErrContinuationReused is the panic value when a task calls its
// continuation a second time (checked in race and invariants builds).
var ErrContinuationReused = ClientError("task: continuation called more than once (a task must call k exactly once)")

func once[T any](k Cont[T]) Cont[T] {
	called := false
	return func(v T, err error) {
		if called {
			panic(ErrContinuationReused)
		}
		called = true
		k(v, err)
	}
}

// Resume calls k(v, err), trampolined like Run. Resume does not look at the
// scope: an outcome is delivered as it is, and the next Run decides.
func Resume[T any](s *Scope, k Cont[T], v T, err error) {
	d := s.depth
	if *d < maxDepth {
		*d++
		k(v, err)
		*d--
		return
	}
	// Copies, so that only this path moves the value to the heap (a
	// closure's captured parameters would be moved on every call).
	v2, err2 := v, err
	s.env.rt.Schedule(func() { k(v2, err2) })
}

// Value returns a task that succeeds with v.
func Value[T any](v T) Task[T] {
	if _, ok := any(v).(Unit); ok {
		return any(unitValue).(Task[T]) // all alike: made once
	}
	return func(s *Scope, k Cont[T]) { k(v, nil) }
}

// unitValue is Value(Unit{}).
var unitValue Task[Unit] = func(s *Scope, k Cont[Unit]) { k(Unit{}, nil) }

// Fail returns a task that fails with err.
func Fail[T any](err error) Task[T] {
	return func(s *Scope, k Cont[T]) {
		var zero T
		k(zero, err)
	}
}

// Func returns a task that computes its value synchronously with f. A nil
// f gives a task that fails with ErrNilTask.
func Func[T any](f func(s *Scope) (T, error)) Task[T] {
	if f == nil {
		return Fail[T](ErrNilTask)
	}
	return func(s *Scope, k Cont[T]) { k(f(s)) }
}

// Done is the task that succeeds at once with no value.
var Done Task[Unit] = Value(Unit{})

// Suspend parks the chain until the asynchronous work begun by start calls
// resume, or until the scope is done (its error then goes to k at once, and
// a later resume is dropped: a late result is discarded). start may return
// a stop function, called when the wait is abandoned, to release what it
// holds (a timer, say). resume must be called on the executor goroutine, at
// most once; calls after the first or after abandonment do nothing.
func Suspend[T any](s *Scope, k Cont[T], start func(resume Cont[T]) (stop func())) {
	if s.err != nil {
		var zero T
		k(zero, s.err)
		return
	}
	w := &wait[T]{k: k}
	s.addWait(w)
	// resume reads s and k from w (its owner is s while it waits), so
	// that it holds w alone.
	w.stop = start(func(v T, err error) {
		s := w.owner
		if s == nil {
			return // abandoned or already resumed
		}
		if s.err != nil {
			// The scope has ended and the wait's abandonment is on its
			// way (Cancel delivers it): this result is late, dropped.
			return
		}
		s.removeWait(w)
		w.stop = nil
		Resume(s, w.k, v, err)
	})
	if w.k == nil && w.stop != nil { // abandoned during start (not resumed)
		w.stop()
		w.stop = nil
	}
}

type wait[T any] struct {
	waitLink
	k    Cont[T] // nil once abandoned (a wait resumed keeps it)
	stop func()
}

func (w *wait[T]) abandon(err error) {
	if w.stop != nil {
		w.stop()
		w.stop = nil
	}
	k := w.k
	w.k = nil
	var zero T
	k(zero, err)
}

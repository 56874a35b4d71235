package combinators

import (
	"fmt"

	"github.com/zkflow/zkflow/task"
)

// nilFunc is the error of a combinator given a nil function: its task
// fails with it (wrapping task.ErrInvalidArgument) rather than panicking
// on the executor goroutine when it comes to call the function.
func nilFunc(combinator, arg string) error {
	return fmt.Errorf("%w: combinators.%s with a nil %s", task.ErrInvalidArgument, combinator, arg)
}

// Then runs a, then the task f makes from a's value. An error of a skips f
// and is Then's error. The step into f is a step boundary: if the scope has
// ended meanwhile (deadline, cancel, expiry), f's task does not start. A
// nil f gives a task that fails with task.ErrInvalidArgument.
func Then[A, B any](a task.Task[A], f func(A) task.Task[B]) task.Task[B] {
	if f == nil {
		return task.Fail[B](nilFunc("Then", "f"))
	}
	return func(s *task.Scope, k task.Cont[B]) {
		task.Run(s, a, func(v A, err error) {
			if err != nil {
				var zero B
				task.Resume(s, k, zero, err)
				return
			}
			task.Run(s, f(v), k)
		})
	}
}

// Map runs a and transforms its value with f. An error of a skips f and is
// Map's error. A nil f gives a task that fails with
// task.ErrInvalidArgument.
func Map[A, B any](a task.Task[A], f func(A) B) task.Task[B] {
	if f == nil {
		return task.Fail[B](nilFunc("Map", "f"))
	}
	return func(s *task.Scope, k task.Cont[B]) {
		task.Run(s, a, func(v A, err error) {
			if err != nil {
				var zero B
				task.Resume(s, k, zero, err)
				return
			}
			task.Resume(s, k, f(v), nil)
		})
	}
}

// Seq runs a, drops its value, then runs b. It is Then with an f that
// returns b, written out: one function fewer per Seq.
func Seq[A, B any](a task.Task[A], b task.Task[B]) task.Task[B] {
	return func(s *task.Scope, k task.Cont[B]) {
		task.Run(s, a, func(_ A, err error) {
			if err != nil {
				var zero B
				task.Resume(s, k, zero, err)
				return
			}
			task.Run(s, b, k)
		})
	}
}

// OnError runs a; if it fails with one of errs (errors.Is), it runs the
// task handler makes from that error instead, and that is the outcome. Other
// errors pass through. With no errs there is nothing to handle and OnError
// returns a itself; with errs and a nil handler it gives a task that fails
// with task.ErrInvalidArgument. handler may be called with the error of
// a flow that has ended (canceled, or past its deadline, while a waited
// for its next step): the task it returns then does not start, so keep
// side effects out of handler itself and in the task it returns. The same
// holds for Catch's handler and for Then's and Map's f.
func OnError[T any](a task.Task[T], handler func(error) task.Task[T], errs ...error) task.Task[T] {
	if len(errs) == 0 {
		return a
	}
	if handler == nil {
		return task.Fail[T](nilFunc("OnError", "handler"))
	}
	return func(s *task.Scope, k task.Cont[T]) {
		task.Run(s, a, func(v T, err error) {
			if err == nil || !matchAny(err, errs) {
				task.Resume(s, k, v, err) // as a gave it, also in a scope that has ended
				return
			}
			task.Run(s, handler(err), k)
		})
	}
}

// Catch runs a; if it fails with any error, it runs the task handler makes
// from that error instead. A nil handler gives a task that fails with
// task.ErrInvalidArgument.
func Catch[T any](a task.Task[T], handler func(error) task.Task[T]) task.Task[T] {
	if handler == nil {
		return task.Fail[T](nilFunc("Catch", "handler"))
	}
	return func(s *task.Scope, k task.Cont[T]) {
		task.Run(s, a, func(v T, err error) {
			if err == nil {
				task.Resume(s, k, v, nil)
				return
			}
			task.Run(s, handler(err), k)
		})
	}
}

package combinators

import (
	"time"

	"github.com/zkflow/zkflow/task"
)

// Deadline runs t with the absolute deadline at (on the executor's clock).
// Past it, Deadline fails at once with task.ErrDeadlineExceeded (an
// *task.OpError wrapping it names the request that was waiting), even while
// the session is suspended; t's steps see the error at their next step
// boundary and their late results are dropped; cleanups t registered with
// Scope.Defer run. Deadlines nest by taking the earlier one, so a Deadline
// inside another never extends it. A zero at is no deadline: Deadline
// returns t itself.
func Deadline[T any](t task.Task[T], at time.Time) task.Task[T] {
	if at.IsZero() {
		return t
	}
	return func(s *task.Scope, k task.Cont[T]) {
		task.RunIn(s.WithDeadline(at), t, k)
	}
}

// Timeout is Deadline with the deadline d after the moment the task starts.
// d <= 0 is no timeout: Timeout returns t itself.
func Timeout[T any](t task.Task[T], d time.Duration) task.Task[T] {
	if d <= 0 {
		return t
	}
	return func(s *task.Scope, k task.Cont[T]) {
		task.RunIn(s.WithDeadline(s.Now().Add(d)), t, k)
	}
}

// Sleep waits d on the executor's clock. Like every completion, the wake-up
// runs from the task queue, so a sleep that ends while the session is
// suspended resumes on reconnect. A deadline or cancel ends it early.
func Sleep(d time.Duration) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		sleepUntil(s, s.Now().Add(d), k)
	}
}

// SleepUntil waits until the executor's clock reaches at.
func SleepUntil(at time.Time) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) { sleepUntil(s, at, k) }
}

func sleepUntil(s *task.Scope, at time.Time, k task.Cont[task.Unit]) {
	if !s.Now().Before(at) {
		k(task.Unit{}, s.Err())
		return
	}
	task.Suspend(s, k, func(resume task.Cont[task.Unit]) func() {
		tm := s.Runtime().AfterFunc(at, func() {
			s.Schedule(func() { resume(task.Unit{}, nil) })
		})
		return func() { tm.Stop() }
	})
}

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
	sl := &sleep{s: s}
	task.Suspend(s, k, func(resume task.Cont[task.Unit]) func() {
		sl.resume = resume
		sl.wake = sl.step
		sl.tm = s.Runtime().AfterFunc(at, sl.wake)
		return sl.wake
	})
}

// sleep is one wait of sleepUntil. Its step is the one function the wait
// needs (one allocation rather than three): the timer's, the task queue's
// job that the timer's queues, and the stop that Suspend calls when the
// wait is abandoned.
type sleep struct {
	s      *task.Scope
	resume task.Cont[task.Unit]
	tm     task.Timer
	wake   func() // sl.step, made once
	fired  bool   // the timer has run: the next step resumes
}

// step runs as the timer's function (on the event queue), then as the job
// that function queues (on the task queue, paused while the session is
// suspended), or as Suspend's stop. Before the timer has run, Stop tells
// the last from the first: it reports false once the timer's call has
// started, and true, stopping it, while it is pending. After, a stop is
// the abandonment of a wait whose job is queued: its resume is dropped
// (the wait is abandoned), as the job's own will be.
func (sl *sleep) step() {
	if !sl.fired {
		if sl.tm.Stop() {
			return // Suspend's stop: the timer will not run
		}
		sl.fired = true
		sl.s.Schedule(sl.wake)
		return
	}
	sl.resume(task.Unit{}, nil)
}

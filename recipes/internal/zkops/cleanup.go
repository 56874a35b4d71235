package zkops

import (
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

// StartCleanup starts cleanup, what undoes an attempt that ended without
// what it tried for (its contender node deleted), as a flow of its own
// (task.Go: bound to the session current then, to no deadline; a failure
// goes to the runtime's error report), counted in p from now until it
// ends, whatever its outcome. A cleanup an ACL refuses (task.ErrNoAuth)
// is run again in the background until the ACL lets it or the session
// ends (RetryRefused), no longer counted. A blocking Client that passes its Pending
// has its next attempt wait for the cleanup (blocking.Pending.Wait),
// rather than queue behind a node of its own that is still being
// deleted. A nil p counts in the Pending that CountIn gave s, if any, or
// nothing. Executor goroutine.
func StartCleanup(s *task.Scope, p *blocking.Pending, cleanup task.Task[task.Unit]) {
	if p == nil {
		p = countersOf(s.Runtime())[s]
	}
	done := p.Add()
	rt := s.Runtime()
	task.Go(s, cleanup, func(_ task.Unit, err error) {
		done()
		if err != nil {
			rt.Report(err)
		}
		if refusedNotKept(err) {
			// An ACL refuses it (an operator closed the directory, the
			// node's name not known and the listing refused): again
			// later, in the background, uncounted (RetryRefused). A
			// cleanup whose only refusals are deletes that go on
			// already (KeepDeleting) is not run twice; one with a
			// refused part besides those is (refusedNotKept).
			RetryRefused(rt.SessionScope(), cleanup)
		}
	})
}

// CleanupOnError returns k wrapped so that an error delivered to it first
// starts cleanup (StartCleanup, counted in p), unless withdraw has been
// called (once the attempt holds, or has nothing left to clean up). It
// is Scope.Defer on the attempt's scope, run with task.RunIn, made
// countable: the count starts before k hears of the failure, so before a
// blocking Client's call returns it. s is the attempt's caller's scope.
func CleanupOnError[T any](s *task.Scope, p *blocking.Pending, cleanup task.Task[task.Unit], k task.Cont[T]) (wrapped task.Cont[T], withdraw func()) {
	off := false
	return func(v T, err error) {
		if err != nil && !off {
			off = true
			StartCleanup(s, p, cleanup)
		}
		k(v, err)
	}, func() { off = true }
}

// countersKey keys, on each runtime (task.RuntimeValue), the Pendings
// given to scopes by CountIn.
var countersKey byte

func countersOf(rt task.Runtime) map[*task.Scope]*blocking.Pending {
	return task.RuntimeValue(rt, &countersKey, func() map[*task.Scope]*blocking.Pending { return map[*task.Scope]*blocking.Pending{} })
}

// Count counts one piece of background work started from scope s in the
// Pending CountIn gave s, if any, until the returned function is called
// (once is enough; more are harmless): a cleanup a task face leaves
// going as a flow of its own when its caller's scope ends (lock's
// Release of a semaphore's internal lock) is counted for the Client
// whose attempt ran it. Executor goroutine.
func Count(s *task.Scope) (done func()) {
	return countersOf(s.Runtime())[s].Add()
}

// CountIn has the cleanups started from scope s with no Pending of their
// own (StartCleanup with a nil p) counted in p, until the returned
// function is called: a recipe that runs another's task face in its
// attempt's scope (a semaphore its internal lock's acquire) has that
// one's cleanup counted for its Client too. Call the function once the
// attempt has delivered its outcome. A nil p does nothing. Executor
// goroutine.
func CountIn(s *task.Scope, p *blocking.Pending) (stop func()) {
	if p == nil {
		return func() {}
	}
	m := countersOf(s.Runtime())
	m[s] = p
	return func() { delete(m, s) }
}

// Package combinators builds task chains: Then and Map (typed sequencing),
// Seq, OnError and Catch (error branches), Retry (repeat on named errors
// with attempts and jittered backoff on the executor's clock), Fork (start
// an independent flow), All (join), Deadline and Timeout (absolute
// deadlines that nest by taking the earlier), Sleep and Loop.
//
//	// Read, add '!', write back at the version read: again on a conflict, 2s at most.
//	bump := combinators.Then(task.Get("/app/config"), func(d task.Data) task.Task[task.Stat] {
//		return task.Set("/app/config", append(d.Data, '!'), d.Stat.Version)
//	})
//	retry := combinators.Retry(bump, combinators.Policy{On: []error{task.ErrBadVersion}})
//	st, err := executor.Await(ctx, ex, combinators.Timeout(retry, 2*time.Second))
//
// Guarantees, each tested:
//
//   - Every combinator calls its continuation exactly once, on the
//     executor goroutine, and starts inner tasks at step boundaries.
//   - A nil function argument (Then's or Map's f, Catch's or OnError's
//     handler, Loop's cond or body) gives a task that fails with task.ErrInvalidArgument,
//     as a nil task fails with task.ErrNilTask: nothing panics on the
//     executor goroutine.
//   - A combinator whose policy is a no-op returns its input unchanged:
//     Retry with one attempt, OnError with no errors, Deadline with a zero
//     time, Timeout with no duration.
//   - Deadline ends a chain at once when it passes, also while the session
//     is suspended; late results are dropped and cleanups registered with
//     Scope.Defer run, as flows of their own without the deadline.
//   - Retry after connection loss waits for the reconnect (the executor's
//     task queue is paused) instead of spinning; Loop and Retry iterate
//     without growing the stack.
//   - Loop and Retry never hold the executor: after 64 iterations in a
//     row that completed synchronously (a Retry whose task fails at once
//     with an error its policy retries, with no backoff and no attempt
//     limit, such as a Deadline already past retried on
//     task.ErrDeadlineExceeded; a Loop whose body completes at once), the
//     next iteration goes through the task queue. So other flows run
//     between them, and Close or the end of Run's ctx stops such a loop
//     within executor/doc.go's bound, with task.ErrClosed.
//
// The measured cost of a step, a Retry, a Fork, a chain of Thens and a
// whole flow, with the command that measures them: the Figures section of
// the module's README.md.
package combinators

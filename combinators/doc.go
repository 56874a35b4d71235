// Package combinators builds task chains: Then and Map (typed sequencing),
// Seq, OnError and Catch (error branches), Retry (repeat on named errors
// with attempts and jittered backoff on the executor's clock), Fork (start
// an independent flow), All (join), Deadline and Timeout (absolute
// deadlines that nest by taking the earlier), Sleep and Loop.
//
// Guarantees, each tested:
//
//   - Every combinator calls its continuation exactly once, on the
//     executor goroutine, and starts inner tasks at step boundaries.
//   - A combinator whose policy is a no-op returns its input unchanged:
//     Retry with one attempt, OnError with no errors, Deadline with a zero
//     time, Timeout with no duration.
//   - Deadline ends a chain at once when it passes, also while the session
//     is suspended; late results are dropped and cleanups registered with
//     Scope.Defer run, as flows of their own without the deadline.
//   - Retry after connection loss waits for the reconnect (the executor's
//     task queue is paused) instead of spinning; Loop and Retry iterate
//     without growing the stack.
//
// Measured on the project's 2-core machine (go1.26, amd64), median of
//
//	go test -run '^$' -bench . -benchmem -count 3 ./executor
//
// (2026-11-22, with other jobs on the machine: load average about 4, so
// the times are upper bounds) a no-op step of a running chain costs 13.4
// ns and 0 allocations (BenchmarkNoopStep; 9.2 ns on a quiet machine the
// day before), one executor job 6.8 ns and 0 allocations (BenchmarkStep),
// a Retry that fails once then succeeds 152 ns and 2 allocations, a Fork
// with its flow run to completion 307 ns and 7 allocations, a chain of 10
// Thens 1033 ns and 20 allocations (one closure per step and one per
// continuation), a whole submitted flow 377 ns and 9 allocations (one more
// than before: a flow that has not started keeps the state that lets its
// deadline and Cancel end it while the session is suspended).
package combinators

package combinators

import "github.com/zkflow/zkflow/task"

// All runs every task of ts together (each starts when the previous one
// waits) in a child scope and succeeds with their values, in the order of
// ts. The first error ends All at once: the others are canceled (their late
// results dropped, their cleanups run) and that error is All's.
func All[T any](ts ...task.Task[T]) task.Task[[]T] {
	return func(s *task.Scope, k task.Cont[[]T]) {
		task.RunIn(s.Child(), func(c *task.Scope, k task.Cont[[]T]) {
			results := make([]T, len(ts))
			remaining := len(ts)
			if remaining == 0 {
				k(results, nil)
				return
			}
			failed := false
			for i, t := range ts {
				task.Run(c, t, func(v T, err error) {
					if failed || remaining == 0 {
						return
					}
					if err != nil {
						failed = true
						k(nil, err)
						return
					}
					results[i] = v
					remaining--
					if remaining == 0 {
						k(results, nil)
					}
				})
				if failed {
					return
				}
			}
		}, k)
	}
}

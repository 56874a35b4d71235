package combinators

import "github.com/zkflow/zkflow/task"

// Fork starts t as a flow of its own and succeeds at once, so the current
// flow goes on while t runs. The forked flow is bound to the current
// session, has no deadline (wrap t in Deadline to give it one) and does not
// end when the forking flow does. handle, if not nil, receives t's outcome
// on the executor goroutine, exactly once; if nil, an error of t goes to the
// executor's error report.
func Fork[T any](t task.Task[T], handle task.Cont[T]) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Go(s, t, handle)
		k(task.Unit{}, nil)
	}
}

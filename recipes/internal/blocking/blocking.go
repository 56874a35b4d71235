// Package blocking is the machinery the recipes' blocking faces share:
// waiting for a flow that takes something (a lock, a lease, leadership, a
// place at a barrier) until a context ends, without keeping what it took
// when the caller has stopped waiting, and running a handle's task on the
// executor that took the handle.
package blocking

import (
	"context"
	"errors"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/task"
)

// Take runs t on ex and waits until it ends or ctx does. When t ends
// first, Take returns its outcome, after calling won with the value if t
// succeeded (on the calling goroutine, before Take returns). When ctx
// ends first, the flow is canceled and waited for (a canceled flow ends
// promptly); if it had succeeded all the same, undo is called with the
// value so that nothing taken is kept, and Take returns CtxErr(ctx).
// A ctx that has ended already submits nothing; on an executor's
// goroutine, where waiting would wait forever, Take fails at once with
// executor.ErrOnExecutor.
func Take[H any](ctx context.Context, ex *executor.Executor, t task.Task[H], won, undo func(H)) (H, error) {
	var zero H
	if err := executor.CanBlock(); err != nil {
		return zero, err
	}
	if ctx.Err() != nil {
		return zero, CtxErr(ctx)
	}
	type result struct {
		v   H
		err error
	}
	ch := make(chan result, 1)
	f := executor.Submit(ex, t, func(v H, err error) { ch <- result{v, err} })
	park.Wait(ctx, func() bool { return len(ch) > 0 || ctx.Err() != nil })
	select {
	case r := <-ch:
		if r.err == nil && won != nil {
			won(r.v)
		}
		return r.v, r.err
	case <-ctx.Done():
	}
	f.Cancel()
	park.Wait(ctx, func() bool { return len(ch) > 0 })
	r := <-ch // the flow ends promptly once canceled
	if r.err == nil && undo != nil {
		undo(r.v)
	}
	return zero, CtxErr(ctx)
}

// CtxErr is the error a blocking call returns when ctx ended first:
// task.ErrDeadlineExceeded or task.ErrCanceled (which match
// context.DeadlineExceeded and context.Canceled under errors.Is).
func CtxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return task.ErrDeadlineExceeded
	}
	return task.ErrCanceled
}

// Do runs the task mk makes on ex and waits for it until ctx ends
// (executor.Await), once owner, the executor the handle was taken on, is
// ex; otherwise it fails with notOurs at once. A handle taken through the
// task face has no owner and is refused.
func Do[T any](ctx context.Context, ex, owner *executor.Executor, notOurs error, mk func() task.Task[T]) (T, error) {
	if owner == nil || owner != ex {
		var zero T
		return zero, notOurs
	}
	return executor.Await(ctx, ex, mk())
}

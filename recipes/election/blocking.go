package election

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// Campaign is the blocking, context-first Candidate.Campaign: it runs
// cand's campaign on ex and waits until it leads or ctx ends. When ctx
// ends first, the campaign is canceled, its node is deleted by a cleanup
// that outlives ctx, and Campaign returns task.ErrCanceled or
// task.ErrDeadlineExceeded (matching context.Canceled and
// context.DeadlineExceeded under errors.Is); leadership won just as ctx
// ended is resigned. Safe from any goroutine; someone must be running ex
// (executor.Run).
func Campaign(ctx context.Context, ex *executor.Executor, cand Candidate) (*Leadership, error) {
	if ex == nil || cand == nil {
		return nil, fmt.Errorf("election: nil executor or candidate: %w", task.ErrInvalidArgument)
	}
	if err := ctx.Err(); err != nil { // ended already: submit nothing
		return nil, ctxErr(err)
	}
	type result struct {
		l   *Leadership
		err error
	}
	ch := make(chan result, 1)
	f := executor.Submit(ex, cand.Campaign(), func(l *Leadership, err error) { ch <- result{l, err} })
	select {
	case r := <-ch:
		if r.l != nil {
			r.l.ex = ex
		}
		return r.l, r.err
	case <-ctx.Done():
	}
	f.Cancel()
	r := <-ch // the flow ends promptly once canceled
	if r.err == nil {
		// Won just as ctx ended: nobody will use it.
		executor.Submit(ex, r.l.Resign(), nil)
	}
	return nil, ctxErr(ctx.Err())
}

func ctxErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return task.ErrDeadlineExceeded
	}
	return task.ErrCanceled
}

// Leader is the blocking Candidate.Leader.
func Leader(ctx context.Context, ex *executor.Executor, cand Candidate) ([]byte, error) {
	if ex == nil || cand == nil {
		return nil, fmt.Errorf("election: nil executor or candidate: %w", task.ErrInvalidArgument)
	}
	return executor.Await(ctx, ex, cand.Leader())
}

package election

import (
	"context"
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
	l, err := executor.Await(ctx, ex, cand.Campaign())
	if err != nil {
		return nil, err
	}
	l.ex = ex
	return l, nil
}

// Leader is the blocking Candidate.Leader.
func Leader(ctx context.Context, ex *executor.Executor, cand Candidate) ([]byte, error) {
	if ex == nil || cand == nil {
		return nil, fmt.Errorf("election: nil executor or candidate: %w", task.ErrInvalidArgument)
	}
	return executor.Await(ctx, ex, cand.Leader())
}

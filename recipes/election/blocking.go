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

// LeadOptions tune Lead.
type LeadOptions struct {
	// Requeue campaigns again after each leadership, however it ended (lead
	// returned nil, or the leadership was lost), as Apache Curator's
	// LeaderSelector does with autoRequeue. Without it Lead returns after
	// the first leadership.
	Requeue bool
}

// Lead campaigns with cand and, once leading, calls lead with a context
// that is canceled as soon as the leadership ends (lost to an expiry, an
// operator's delete, the disconnect rule; Leadership.Err says which).
// When lead returns, the leadership is given up (Resign: the node is
// deleted, so the next candidate need not wait for an expiry). With
// opts.Requeue the candidate then campaigns again, until ctx ends. lead
// must return soon after its context is canceled: until it does, a new
// leader may be acting while it still is (its writes should go through
// Leadership.Fenced, which the server refuses once another leader may act).
//
// Lead returns ctx's error (task.ErrCanceled or task.ErrDeadlineExceeded)
// when ctx ends, lead's error when lead returns one (the leadership is
// given up first), and nil after one leadership without Requeue. A
// campaign that fails (its session expired while waiting, say) is run
// again. Safe from any goroutine; someone must be running ex.
func Lead(ctx context.Context, ex *executor.Executor, cand Candidate, opts LeadOptions, lead func(context.Context, *Leadership) error) error {
	if ex == nil || cand == nil || lead == nil {
		return fmt.Errorf("election: nil executor, candidate or lead function: %w", task.ErrInvalidArgument)
	}
	for {
		l, err := Campaign(ctx, ex, cand)
		if err != nil {
			if ctx.Err() != nil {
				return ctxErr(ctx.Err())
			}
			if errors.Is(err, task.ErrClosed) {
				return err
			}
			continue // expired while campaigning, node deleted...: again
		}
		lctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-l.Done():
				cancel()
			case <-lctx.Done():
			}
		}()
		lerr := lead(lctx, l)
		cancel()
		// If ctx has ended, StepDown returns at once and the delete goes
		// on in the background.
		_ = l.StepDown(ctx)
		switch {
		case lerr != nil:
			return lerr
		case ctx.Err() != nil:
			return ctxErr(ctx.Err())
		case !opts.Requeue:
			return nil
		}
	}
}

package election

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

// Client is the blocking face of an Election or a Master: the same verbs,
// each taking a context first and waiting for its outcome. Its methods
// are safe from any goroutine and need someone running the executor
// (executor.Run).
type Client struct {
	ex   *executor.Executor
	cand Candidate
}

// NewClient returns a Client of the election under dir (New) whose flows
// run on ex.
func NewClient(ex *executor.Executor, dir string, cfg Config) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("election: nil executor: %w", task.ErrInvalidArgument)
	}
	e, err := New(dir, cfg)
	if err != nil {
		return nil, err
	}
	return &Client{ex: ex, cand: e}, nil
}

// NewMasterClient returns a Client of the master node at path
// (NewMaster) whose flows run on ex.
func NewMasterClient(ex *executor.Executor, path string, cfg Config) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("election: nil executor: %w", task.ErrInvalidArgument)
	}
	m, err := NewMaster(path, cfg)
	if err != nil {
		return nil, err
	}
	return &Client{ex: ex, cand: m}, nil
}

// Candidate is the task face this Client runs: an *Election or a
// *Master.
func (c *Client) Candidate() Candidate { return c.cand }

// Executor is the executor the Client runs its flows on.
func (c *Client) Executor() *executor.Executor { return c.ex }

// Campaign runs the candidate's campaign (Election.Campaign,
// Master.Campaign) and waits until it leads or ctx ends. When ctx
// ends first, the campaign is canceled, its node is deleted by a cleanup
// that outlives ctx, and Campaign returns task.ErrCanceled or
// task.ErrDeadlineExceeded (matching context.Canceled and
// context.DeadlineExceeded under errors.Is); leadership won just as ctx
// ended is resigned.
func (c *Client) Campaign(ctx context.Context) (*Leadership, error) {
	return blocking.Take(ctx, c.ex, c.cand.Campaign(), func(l *Leadership) { l.ex = c.ex },
		func(l *Leadership) { executor.Submit(c.ex, l.Resign(), nil) }) // won just as ctx ended: nobody will use it
}

// Leader reads the current leader's data (Election.Leader,
// Master.Leader).
func (c *Client) Leader(ctx context.Context) ([]byte, error) {
	return executor.Await(ctx, c.ex, c.cand.Leader())
}

// Resign gives up leadership this Client won (Leadership.Resign). If ctx
// ends first, Resign returns its error and the delete goes on in the
// background. A Leadership not won through a Client on this executor (one
// on another executor, or Campaign run by hand) is refused with task.ErrInvalidArgument: run its own Resign on
// the executor that won it.
func (c *Client) Resign(ctx context.Context, l *Leadership) error {
	_, err := blocking.Do(ctx, c.ex, exOf(l), errNotOurs, l.Resign)
	return err
}

// Fenced runs ops in one multi that succeeds only while l still leads
// (Leadership.Fenced), and waits for it until ctx ends.
func (c *Client) Fenced(ctx context.Context, l *Leadership, ops ...task.MultiOp) ([]task.MultiResult, error) {
	return blocking.Do(ctx, c.ex, exOf(l), errNotOurs, func() task.Task[[]task.MultiResult] { return l.Fenced(ops...) })
}

var errNotOurs = fmt.Errorf("election: leadership not won through a Client on this executor: %w", task.ErrInvalidArgument)

func exOf(l *Leadership) *executor.Executor {
	if l == nil {
		return nil
	}
	return l.ex
}

// LeadOptions tune Lead.
type LeadOptions struct {
	// Requeue campaigns again after each leadership, however it ended (lead
	// returned nil, or the leadership was lost), as Apache Curator's
	// LeaderSelector does with autoRequeue. Without it Lead returns after
	// the first leadership.
	Requeue bool
}

// Lead campaigns and, once leading, calls lead with a context
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
// again. A nil lead fails with task.ErrInvalidArgument.
func (c *Client) Lead(ctx context.Context, opts LeadOptions, lead func(context.Context, *Leadership) error) error {
	if lead == nil {
		return fmt.Errorf("election: nil lead function: %w", task.ErrInvalidArgument)
	}
	for {
		l, err := c.Campaign(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return blocking.CtxErr(ctx)
			}
			if errors.Is(err, task.ErrClosed) {
				return err
			}
			continue // expired while campaigning, node deleted...: again
		}
		lctx, cancel := context.WithCancel(ctx)
		park.Go(lctx, func(lctx context.Context) { // a goroutine (under a simulation, one of its actors)
			park.Wait(lctx, func() bool { return park.Closed(l.Done()) || lctx.Err() != nil })
			select {
			case <-l.Done():
				cancel()
			case <-lctx.Done():
			}
		})
		lerr := lead(lctx, l)
		cancel()
		// If ctx has ended, Resign returns at once and the delete goes on
		// in the background.
		_ = c.Resign(ctx, l)
		switch {
		case lerr != nil:
			return lerr
		case ctx.Err() != nil:
			return blocking.CtxErr(ctx)
		case !opts.Requeue:
			return nil
		}
	}
}

package semaphore

import (
	"context"
	"fmt"

	"github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

// Client is the blocking face of a Semaphore: the same verbs, each taking
// a context first and waiting for its outcome. Its methods are safe from
// any goroutine and need someone running the executor (executor.Run). One
// Client may acquire several leases (each Acquire is an acquirer of its
// own).
type Client struct {
	ex *executor.Executor
	m  *Semaphore
}

// NewClient returns a Client of n leases on path whose flows run on
// ex, with the options of New (WithACL). A nil ex fails with
// task.ErrInvalidArgument; the other errors are New's.
func NewClient(ex *executor.Executor, path string, n int, opts ...Option) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("semaphore: nil executor: %w", task.ErrInvalidArgument)
	}
	m, err := New(path, n, opts...)
	if err != nil {
		return nil, err
	}
	return &Client{ex: ex, m: m}, nil
}

// Acquire waits for a lease until ctx ends. When ctx ends first, the
// attempt is canceled, its lease node is deleted and the internal lock
// released by a cleanup that outlives ctx, and Acquire returns
// task.ErrCanceled or task.ErrDeadlineExceeded (matching
// context.Canceled and context.DeadlineExceeded under errors.Is). If the
// lease was acquired just as ctx ended, it is released.
func (b *Client) Acquire(ctx context.Context) (*Lease, error) {
	ls, err := await(ctx, "semaphore "+b.m.Path()+": acquire", b.ex, oneOf(b.m.Acquire()))
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// TryAcquire takes a lease only if one is free now (Semaphore.TryAcquire):
// it fails with ErrBusy, leaving no node behind, instead of waiting. ctx
// bounds the round trips it takes, as for Acquire.
func (b *Client) TryAcquire(ctx context.Context) (*Lease, error) {
	ls, err := await(ctx, "semaphore "+b.m.Path()+": try acquire", b.ex, oneOf(b.m.TryAcquire()))
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// AcquireMany waits for k leases (Semaphore.AcquireMany) until ctx ends;
// if ctx ends first, or one acquire fails, the leases already acquired
// are released.
func (b *Client) AcquireMany(ctx context.Context, k int) ([]*Lease, error) {
	if err := b.m.checkMany(k); err != nil {
		return nil, err // at once, whatever ctx and the executor
	}
	return await(ctx, "semaphore "+b.m.Path()+": acquire many", b.ex, b.m.AcquireMany(k))
}

// Executor is the executor the Client runs its flows on.
func (b *Client) Executor() *executor.Executor { return b.ex }

// Semaphore is the task face this Client runs.
func (b *Client) Semaphore() *Semaphore { return b.m }

func oneOf(t task.Task[*Lease]) task.Task[[]*Lease] {
	return combinators.Map(t, func(l *Lease) []*Lease { return []*Lease{l} })
}

func await(ctx context.Context, what string, ex *executor.Executor, t task.Task[[]*Lease]) ([]*Lease, error) {
	return blocking.Take(ctx, what, ex, t, func(ls []*Lease) {
		for _, l := range ls {
			l.ex = ex
		}
	}, func(ls []*Lease) {
		for _, l := range ls {
			executor.Submit(ex, l.Release(), nil)
		}
	})
}

// Release returns a lease this Client acquired (Lease.Release). The
// release is always started, whatever ctx: if ctx has ended, or ends
// before the delete is done, Release returns its error
// (task.ErrCanceled or task.ErrDeadlineExceeded) and the release goes on
// in the background (l's Done closes, the node is deleted). A Lease not
// taken through a Client on this executor (one on another executor, or
// Semaphore.Acquire run by hand) is refused with task.ErrInvalidArgument:
// run its own Release on the executor that took it.
func (b *Client) Release(ctx context.Context, l *Lease) error {
	if err := blocking.Owned(b.ex, exOf(l), errNotOurs); err != nil {
		return err
	}
	_, err := blocking.Give(ctx, "semaphore "+b.m.Path()+": release", b.ex, nil, l.Release())
	return err
}

// Fenced runs ops in one multi that succeeds only while l is still held
// (Lease.Fenced), and waits for it until ctx ends.
func (b *Client) Fenced(ctx context.Context, l *Lease, ops ...task.MultiOp) ([]task.MultiResult, error) {
	return blocking.Do(ctx, "semaphore "+b.m.Path()+": fenced write", b.ex, exOf(l), errNotOurs, func() task.Task[[]task.MultiResult] { return l.Fenced(ops...) })
}

var errNotOurs = fmt.Errorf("semaphore: a lease not acquired through a Client on this executor: %w", task.ErrInvalidArgument)

func exOf(l *Lease) *executor.Executor {
	if l == nil {
		return nil
	}
	return l.ex
}

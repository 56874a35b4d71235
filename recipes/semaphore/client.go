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
//
// A Client never meets a node of its own that it is still deleting in the
// background: Acquire, TryAcquire and AcquireMany first wait, within
// their own ctx, for every such delete of this Client: a Release that
// went on after its ctx ended, the cleanup of an acquire that ended
// without the lease (deadline, cancel, error; the internal lock's node
// included), the delete of the node of a lease lost while the session
// lived (someone else changed the node), the release of a lease taken
// just as ctx ended, and a Release's delete an ACL refused, until the
// node is gone. None of them waits for another acquirer, so a try
// still never waits behind one; an acquire still waiting for a lease is
// not among them, so goroutines acquiring through one Client never wait
// for each other's acquires.
//
// A nil or zero Client (not made by NewClient) fails every call with
// an error wrapping task.ErrInvalidArgument.
type Client struct {
	ex *executor.Executor
	m  *Semaphore
	// pending counts the deletes of this Client's own nodes going on in
	// the background (see Client): the next acquire waits for them.
	pending blocking.Pending
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
	if b.zero() {
		return nil, errZeroClient
	}
	ls, err := b.await(ctx, "semaphore "+b.m.Path()+": acquire", oneOf(b.m.acquire(false, &b.pending)))
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// TryAcquire takes a lease only if one is free now (Semaphore.TryAcquire):
// it fails with ErrBusy, leaving no node behind, instead of waiting. ctx
// bounds the round trips it takes, as for Acquire.
func (b *Client) TryAcquire(ctx context.Context) (*Lease, error) {
	if b.zero() {
		return nil, errZeroClient
	}
	ls, err := b.await(ctx, "semaphore "+b.m.Path()+": try acquire", oneOf(b.m.acquire(true, &b.pending)))
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// AcquireMany waits for k leases (Semaphore.AcquireMany) until ctx ends;
// if ctx ends first, or one acquire fails, the leases already acquired
// are released.
func (b *Client) AcquireMany(ctx context.Context, k int) ([]*Lease, error) {
	if b.zero() {
		return nil, errZeroClient
	}
	if err := b.m.checkMany(k); err != nil {
		return nil, err // at once, whatever ctx and the executor
	}
	return b.await(ctx, "semaphore "+b.m.Path()+": acquire many", b.m.acquireMany(k, &b.pending))
}

// Executor is the executor the Client runs its flows on.
func (b *Client) Executor() *executor.Executor {
	if b == nil {
		return nil
	}
	return b.ex
}

// Semaphore is the task face this Client runs.
func (b *Client) Semaphore() *Semaphore {
	if b == nil {
		return nil
	}
	return b.m
}

func oneOf(t task.Task[*Lease]) task.Task[[]*Lease] {
	return combinators.Map(t, func(l *Lease) []*Lease { return []*Lease{l} })
}

// await runs t once the Client's own deletes in the background are done
// (pending), and waits for it (blocking.Take).
func (b *Client) await(ctx context.Context, what string, t task.Task[[]*Lease]) ([]*Lease, error) {
	if err := executor.CanBlock(); err != nil {
		return nil, err
	}
	if err := b.pending.Wait(ctx, what); err != nil {
		return nil, err
	}
	return blocking.Take(ctx, what, b.ex, t, func(ls []*Lease) {
		for _, l := range ls {
			l.ex, l.cl = b.ex, b
		}
	}, func(ls []*Lease) {
		for _, l := range ls {
			blocking.Background(b.ex, &b.pending, l.Release())
		}
	})
}

// Release returns a lease this Client acquired (Lease.Release). The
// release is always started, whatever ctx: if ctx has ended, or ends
// before the delete is done, Release returns its error
// (task.ErrCanceled or task.ErrDeadlineExceeded) and the release goes on
// in the background (l's Done closes, the node is deleted, and this
// Client's next acquire waits for that). A delete an ACL refuses
// (task.ErrNoAuth) is sent again in the background until the ACL lets
// it or the session ends (Lease.Release), and this Client's next acquire
// waits for that too, rather than count its own node as a lease taken.
// A Lease not
// taken through a Client on this executor (one on another executor, or
// Semaphore.Acquire run by hand) is refused with task.ErrInvalidArgument:
// run its own Release on the executor that took it; so is one another
// Client on this executor took (release it through that Client, whose
// next acquire must wait for the delete).
func (b *Client) Release(ctx context.Context, l *Lease) error {
	if b.zero() {
		return errZeroClient
	}
	if err := blocking.Owned(b.ex, exOf(l), errNotOurs); err != nil {
		return err
	}
	if l.cl != b {
		return errOtherClient
	}
	_, err := blocking.Give(ctx, "semaphore "+b.m.Path()+": release", b.ex, &b.pending, l.Release())
	return err
}

// Fenced runs ops in one multi that succeeds only while l is still held
// (Lease.Fenced), and waits for it until ctx ends.
func (b *Client) Fenced(ctx context.Context, l *Lease, ops ...task.MultiOp) ([]task.MultiResult, error) {
	if b.zero() {
		return nil, errZeroClient
	}
	return blocking.Do(ctx, "semaphore "+b.m.Path()+": fenced write", b.ex, exOf(l), errNotOurs, func() task.Task[[]task.MultiResult] { return l.Fenced(ops...) })
}

var errNotOurs = fmt.Errorf("semaphore: a lease not acquired through a Client on this executor: %w", task.ErrInvalidArgument)

var errOtherClient = fmt.Errorf("semaphore: a lease acquired through another Client: %w", task.ErrInvalidArgument)

func exOf(l *Lease) *executor.Executor {
	if l == nil {
		return nil
	}
	return l.ex
}

// zero reports a nil or zero Client (not made by NewClient): its methods
// fail with errZeroClient.
func (b *Client) zero() bool { return b == nil || b.ex == nil || b.m == nil }

var errZeroClient = fmt.Errorf("semaphore: nil or zero Client (not made by NewClient): %w", task.ErrInvalidArgument)

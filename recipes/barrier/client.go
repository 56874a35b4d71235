package barrier

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Client is the blocking, context-first API over a Barrier: its methods are
// safe from any goroutine and need someone running the executor
// (executor.Run). Each call runs one flow on the executor and returns its
// outcome; when ctx ends first the flow is canceled and the call returns
// task.ErrCanceled or task.ErrDeadlineExceeded (matching context.Canceled
// and context.DeadlineExceeded under errors.Is).
type Client struct {
	ex *executor.Executor
	b  *Barrier

	// pending counts the Removes of this Client going on in the
	// background (their ctx ended first): Set waits for them.
	pending blocking.Pending
}

// NewClient returns a Client on the barrier node path whose flows run on ex,
// with the options of New (WithACL).
func NewClient(ex *executor.Executor, path string, opts ...Option) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("barrier: nil executor: %w", task.ErrInvalidArgument)
	}
	b, err := New(path, opts...)
	if err != nil {
		return nil, err
	}
	return &Client{ex: ex, b: b}, nil
}

// Barrier is the task face this Client runs.
func (g *Client) Barrier() *Barrier { return g.b }

// zero reports a Client not made by NewClient (nil, or a zero value).
func (g *Client) zero() bool { return g == nil || g.ex == nil || g.b == nil }

// Set raises the barrier (Barrier.Set), again on the next session if the
// session expires meanwhile. While a Remove of this Client goes on in the
// background (its ctx ended first), Set first waits for it, within its
// own ctx: so that Remove never lifts the barrier after Set has returned.
// When ctx ends first, Set returns its error, and the barrier may be up
// all the same (the create may have been applied): Remove lifts it.
func (g *Client) Set(ctx context.Context, data []byte) error {
	if g.zero() {
		return errNil("Client")
	}
	if err := executor.CanBlock(); err != nil {
		return err
	}
	if err := g.pending.Wait(ctx, "barrier "+g.b.Path()+": set"); err != nil {
		return err
	}
	_, err := blocking.AwaitAcrossExpiry(ctx, "barrier "+g.b.Path()+": set", g.ex, g.b.Set(data))
	return err
}

// Remove lifts the barrier (Barrier.Remove), again on the next session if
// the session expires meanwhile. The remove is started whatever ctx, so
// `defer gate.Remove(ctx)` lifts the barrier also when ctx has ended:
// then Remove returns ctx's error at once and the delete goes on in the
// background (this Client's next Set waits for it).
func (g *Client) Remove(ctx context.Context) error {
	if g.zero() {
		return errNil("Client")
	}
	if canary.On(bugRemoveOnceInBackground) {
		for {
			_, err := blocking.Give(ctx, "barrier "+g.b.Path()+": remove", g.ex, &g.pending, g.b.Remove())
			if errors.Is(err, task.ErrSessionExpired) && ctx.Err() == nil {
				continue
			}
			return err
		}
	}
	// The node is persistent: no session's end deletes it, so the delete
	// is made again on each next session also once ctx has ended.
	_, err := blocking.GiveAcrossExpiry(ctx, "barrier "+g.b.Path()+": remove", g.ex, &g.pending, g.b.Remove())
	return err
}

// Wait blocks until the barrier's node does not exist (Barrier.Wait). A
// session expiry does not end the wait: it goes on on the next session.
func (g *Client) Wait(ctx context.Context) error {
	if g.zero() {
		return errNil("Client")
	}
	_, err := blocking.AwaitAcrossExpiry(ctx, "barrier "+g.b.Path()+": wait", g.ex, g.b.Wait())
	return err
}

// DoubleClient is the blocking face of a DoubleBarrier, with the same
// rules as Client.
type DoubleClient struct {
	ex *executor.Executor
	d  *DoubleBarrier

	// pending counts the cleanups of this Client's Enters and the
	// deletes of its Leaves still running in the background (their ctx
	// ended first, or an ACL refused them): the next Enter waits for
	// them.
	pending blocking.Pending

	mu     sync.Mutex
	inside bool // an Enter runs, or its participant has not been given to Leave
	// current: the participant of the last Enter, until given to Leave;
	// only its Leave lets the next Enter in (a Leave again of an earlier
	// one must not).
	current *Participant
}

// zero reports a DoubleClient not made by NewDoubleClient (nil, or a
// zero value).
func (d *DoubleClient) zero() bool { return d == nil || d.ex == nil || d.d == nil }

// errInside is Enter's error while this DoubleClient is inside already.
var errInside = fmt.Errorf("barrier: this DoubleClient has entered already (Leave its participant first): %w", task.ErrInvalidArgument)

// NewDoubleClient returns a DoubleClient for n participants under dir whose flows run
// on ex, with the options of NewDouble (WithACL).
func NewDoubleClient(ex *executor.Executor, dir string, n int, opts ...Option) (*DoubleClient, error) {
	if ex == nil {
		return nil, fmt.Errorf("barrier: nil executor: %w", task.ErrInvalidArgument)
	}
	d, err := NewDouble(dir, n, opts...)
	if err != nil {
		return nil, err
	}
	return &DoubleClient{ex: ex, d: d}, nil
}

// DoubleBarrier is the task face this DoubleClient runs.
func (d *DoubleClient) DoubleBarrier() *DoubleBarrier { return d.d }

// Enter registers a participant and blocks until Size have arrived
// (DoubleBarrier.Enter). If the session expires meanwhile (the node went
// with it) it enters again on the next session. When ctx ends first, the
// node is deleted by a cleanup that outlives ctx, also when the create's
// outcome was still in doubt (its reply lost or not yet come).
// If the participant entered just as ctx ended, its node is deleted.
// While such a cleanup of this DoubleClient, or the delete of its Leave,
// goes on in the background, Enter first waits for it, within its own
// ctx: so one DoubleClient never
// has two participant nodes of one session, which would count twice. For
// the same reason, an Enter while another one of this DoubleClient runs,
// or while its participant has not been given to Leave, fails at once
// with an error wrapping task.ErrInvalidArgument.
func (d *DoubleClient) Enter(ctx context.Context) (*Participant, error) {
	if d.zero() {
		return nil, errNil("DoubleClient")
	}
	if err := executor.CanBlock(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	if d.inside {
		d.mu.Unlock()
		return nil, errInside
	}
	d.inside = true
	d.mu.Unlock()
	p, err := d.enter(ctx)
	if err != nil {
		d.mu.Lock()
		d.inside = false
		d.mu.Unlock()
		return nil, err
	}
	p.owner = d
	d.mu.Lock()
	d.current = p
	d.mu.Unlock()
	return p, nil
}

func (d *DoubleClient) enter(ctx context.Context) (*Participant, error) {
	for {
		if err := d.waitCleanups(ctx); err != nil {
			return nil, err
		}
		p, err := d.enterOnce(ctx)
		if errors.Is(err, task.ErrSessionExpired) && ctx.Err() == nil {
			continue
		}
		return p, err
	}
}

// waitCleanups waits for the cleanups of this Client's earlier Enters.
func (d *DoubleClient) waitCleanups(ctx context.Context) error {
	if canary.On(bugEnterNoWait) {
		return nil
	}
	return d.pending.Wait(ctx, "double barrier "+d.d.Dir()+": enter")
}

func (d *DoubleClient) enterOnce(ctx context.Context) (*Participant, error) {
	return blocking.Take(ctx, "double barrier "+d.d.Dir()+": enter", d.ex, d.d.enter(&d.pending), nil, func(p *Participant) {
		// Counted until the node is gone, refused by an ACL or not
		// (zkops.UntilAllowed), as a failed entry's cleanup is: the
		// next Enter must not add a second node of this session.
		done := d.pending.Add()
		executor.Submit(d.ex, zkops.UntilAllowed(p.deleteOwn()), func(_ task.Unit, err error) {
			done()
			if err != nil && !errors.Is(err, task.ErrClosed) {
				d.ex.Report(err)
			}
		})
	})
}

// Leave removes p and blocks until every participant has left
// (Participant.Leave). If the session expires meanwhile, it goes on
// waiting on the next session. p's node is deleted whatever ctx: when
// ctx has ended, or ends first, Leave returns its error
// (task.ErrCanceled or task.ErrDeadlineExceeded), stops waiting for the
// others, and the delete goes on in the background (also while an ACL
// refuses it: Leave then fails with task.ErrNoAuth); the next Enter of
// the DoubleClient that entered p (this one, or another of this executor
// and directory: p is given to Leave for it, and its next Enter is let
// in) waits for it. A participant entered on another executor (or
// another directory) is refused with an error wrapping
// task.ErrInvalidArgument.
func (d *DoubleClient) Leave(ctx context.Context, p *Participant) error {
	if d.zero() {
		return errNil("DoubleClient")
	}
	if p == nil || p.d == nil || p.d.dir != d.d.dir || p.rt != task.Runtime(d.ex) {
		return fmt.Errorf("barrier: Leave of a participant not entered on this DoubleClient's executor and directory: %w", task.ErrInvalidArgument)
	}
	// A participant another DoubleClient (of this executor and
	// directory) entered is left for that one, its owner: the owner's next
	// Enter is let in, and waits for this delete.
	o := d
	if p.owner != nil {
		o = p.owner
	}
	// The delete of p's node is counted in the owner's pending until it is
	// done (also when ctx has ended, and while an ACL refuses it): the
	// owner's next Enter waits for it, as for a failed Enter's cleanup,
	// rather than add a second node of this session.
	pending := &o.pending
	if canary.On(bugLeaveUncounted) {
		pending = nil
	}
	// Counted from before the Enter is let in until the leave flow has
	// counted its delete: an Enter of another goroutine let in between
	// would otherwise find nothing to wait for, and its create could be
	// sent ahead of the delete.
	bridge := pending.Add()
	defer bridge()
	if p.owner != nil {
		o.mu.Lock()
		if o.current == p || canary.On(bugLeaveAgainLetsIn) {
			o.inside, o.current = false, nil // the leave is submitted below, ahead of any later Enter's create
		}
		o.mu.Unlock()
	}
	leave := p.leave(pending)
	bridged := task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
		leave(s, k) // counts the delete first
		bridge()
	})
	for {
		_, err := blocking.GiveThenWait(ctx, "double barrier "+d.d.Dir()+": leave", d.ex, pending, bridged, zkops.UntilAllowed(p.deleteOwn()))
		if errors.Is(err, task.ErrSessionExpired) && ctx.Err() == nil {
			continue // the node went with the session: wait on the next one
		}
		return err
	}
}

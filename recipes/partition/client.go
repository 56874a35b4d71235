package partition

import (
	"context"
	"fmt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

// Client is the blocking, context-first face of a Partitioner: its
// methods are safe from any goroutine and need someone running the
// executor (executor.Run). When ctx ends first, a call returns
// task.ErrCanceled or task.ErrDeadlineExceeded (matching context.Canceled
// and context.DeadlineExceeded under errors.Is).
type Client struct {
	ex *executor.Executor
	p  *Partitioner
	// What its calls are, for their errors: "partition <path>: join",
	// ": fenced write" and ": leave", made once.
	join, fenced, leave string
}

// NewClient returns a Client of the set of items under path (New) whose
// flows run on ex.
func NewClient(ex *executor.Executor, path string, items []string, opts ...Option) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("partition: nil executor: %w", task.ErrInvalidArgument)
	}
	p, err := New(path, items, opts...)
	if err != nil {
		return nil, err
	}
	what := "partition " + p.Path()
	return &Client{ex: ex, p: p, join: what + ": join", fenced: what + ": fenced write", leave: what + ": leave"}, nil
}

// Partitioner is the set the Client runs.
func (c *Client) Partitioner() *Partitioner { return c.p }

// Join makes a member (Partitioner.Join) and returns it at once; on, if
// not nil, is called with every Change on the executor goroutine and must
// not block. If ctx ends just as the member was made, it leaves.
func (c *Client) Join(ctx context.Context, identifier string, on func(Change)) (*Member, error) {
	if c.zero() {
		return nil, errNil("or zero Client")
	}
	return blocking.Take(ctx, c.join, c.ex, c.p.Join(identifier, on), nil, func(m *Member) { executor.Submit(c.ex, m.Leave(), nil) })
}

// Wait blocks until m is in state Acquired and returns what it holds
// (kazoo's wait_for_acquire), or until m ends (its Err) or ctx does
// (with a ctx that has ended it fails at once, with a nil ctx with
// executor.ErrNilContext; on an executor's goroutine, with
// executor.ErrOnExecutor). Wait, Fenced and Leave refuse
// a member joined on another executor than the Client's with an error
// wrapping task.ErrInvalidArgument.
func (c *Client) Wait(ctx context.Context, m *Member) ([]Hold, error) {
	if c.zero() {
		return nil, errNil("or zero Client")
	}
	if m == nil || m.p == nil {
		return nil, errNil("Member")
	}
	if err := c.owns(m); err != nil {
		return nil, err
	}
	if err := executor.CanBlock(); err != nil {
		return nil, err
	}
	if ctx == nil || ctx.Err() != nil { // a nil ctx: executor.ErrNilContext
		return nil, blocking.CtxErr(ctx, "partition "+c.p.Path()+": wait")
	}
	for {
		st, held, wake := m.changes()
		switch st {
		case Acquired:
			return held, nil
		case Ended:
			return nil, m.Err()
		}
		park.Wait(ctx, func() bool { return park.Closed(wake) || ctx.Err() != nil })
		if park.Closed(wake) { // a change already in wins over a ctx that has ended too
			continue
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, blocking.CtxErr(ctx, "partition "+c.p.Path()+": wait")
		}
	}
}

// Fenced applies ops behind the fence of m's hold of item
// (Member.Fenced): ErrNotHeld if m does not hold it (a hold ended by an
// expiry m has seen included), an error wrapping ErrLost if the hold
// ended before the write was applied, task.ErrSessionExpired if the
// session ended with the write sent (the hold has ended; the write may
// or may not have been applied, while the hold still stood). The hold is
// the one m has when the write runs, which may be a later hold of the
// item than one the caller got from Wait: to fence a write by the hold
// it was made for, use FencedHold.
func (c *Client) Fenced(ctx context.Context, m *Member, item string, ops ...task.MultiOp) ([]task.MultiResult, error) {
	if c.zero() {
		return nil, errNil("or zero Client")
	}
	if m == nil || m.p == nil {
		return nil, errNil("Member")
	}
	if err := c.owns(m); err != nil {
		return nil, err
	}
	return blocking.Await(ctx, c.fenced, c.ex, m.Fenced(item, ops...))
}

// FencedHold applies ops behind the fence of hold h itself (Hold.Fenced),
// one of m's holds (from Wait, Member.Held or Member.Hold): it fails
// with an error wrapping ErrLost once h has ended, even when m holds the
// item again under a later hold, so that a write made for h (from what
// was read under it) is never applied under another hold. A Hold m did
// not hand out (another member's, another process's, one made by hand,
// or one of m's whose Item or Path was changed) is refused with an error
// wrapping task.ErrInvalidArgument, nothing sent: its fence would let the
// write in while someone else holds the item.
// Its other errors are Fenced's.
func (c *Client) FencedHold(ctx context.Context, m *Member, h Hold, ops ...task.MultiOp) ([]task.MultiResult, error) {
	if c.zero() {
		return nil, errNil("or zero Client")
	}
	if m == nil || m.p == nil {
		return nil, errNil("Member")
	}
	if err := c.owns(m); err != nil {
		return nil, err
	}
	if !h.of(m) {
		return nil, fmt.Errorf("partition %s: fenced write: item %q: a hold member %q did not hand out: %w", c.p.Path(), h.Item, m.id, task.ErrInvalidArgument)
	}
	return blocking.Await(ctx, c.fenced, c.ex, h.Fenced(ops...))
}

// Leave gives up m's items and leaves the party (Member.Leave). The leave
// is started whatever ctx: if ctx has ended, or ends first, Leave returns
// its error and the leave goes on in the background.
func (c *Client) Leave(ctx context.Context, m *Member) error {
	if c.zero() {
		return errNil("or zero Client")
	}
	if m == nil || m.p == nil {
		return errNil("Member")
	}
	if err := c.owns(m); err != nil {
		return err
	}
	// The member reports a refused delete to OnError itself: the
	// give-back does not tell it again.
	_, err := blocking.GiveReported(ctx, c.leave, c.ex, nil, m.Leave())
	return err
}

// zero reports a Client not made by NewClient (nil, or a zero value).
func (c *Client) zero() bool { return c == nil || c.ex == nil || c.p == nil }

// owns refuses a member joined on another executor than the Client's.
func (c *Client) owns(m *Member) error {
	ex, _ := m.rt.(*executor.Executor)
	return blocking.Owned(c.ex, ex, errNotOurs)
}

func errNil(what string) error {
	return fmt.Errorf("partition: nil %s: %w", what, task.ErrInvalidArgument)
}

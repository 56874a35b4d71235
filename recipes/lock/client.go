package lock

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

// Client is the blocking face of a Lock: the same verbs, each taking a
// context first and waiting for its outcome. Its methods are safe from
// any goroutine and need someone running the executor (executor.Run).
//
// A Client is not re-entrant: Go has no goroutine identity to tell a
// second Acquire by the holder from one by another goroutine (sync.Mutex
// is not re-entrant either), and a holder that called Acquire again would
// wait behind itself forever. So Acquire and TryAcquire on a Client that
// holds the lock fail at once with ErrAlreadyHeld. To exclude goroutines
// of one process from each other as well, give each its own Client (each
// is a contender of its own) or put a sync.Mutex in front.
//
// Nor does a Client queue behind a node of its own that it is still
// deleting in the background: Acquire and TryAcquire first wait, within
// their own ctx, for every such delete of this Client: a Release that
// went on after its ctx ended, the cleanup of an Acquire or TryAcquire
// that ended without the lock (deadline, cancel, busy, error), the delete
// of the node of a hold lost while the session lived (someone else
// changed the node), the release of a lock taken just as ctx ended, and
// a Release's delete an ACL refused, until the node is gone.
// None of them waits for another contender, so TryAcquire still never
// waits behind one.
//
// A nil or zero Client (not made by NewClient) fails every call with
// an error wrapping task.ErrInvalidArgument.
type Client struct {
	ex *executor.Executor
	l  *Lock

	mu   sync.Mutex
	held *Held // the lock this Client holds, until it ends
	// pending counts the deletes of this Client's own nodes going on in
	// the background (see Client): the next acquire waits for them.
	pending blocking.Pending
	// The tasks of Acquire and TryAcquire, counting their cleanups and
	// their holds' deletes after a loss in pending, made once.
	acq, tryAcq task.Task[*Held]

	// What its calls name in the errors of a context's end, and Take's
	// hooks (setHooks), made once.
	whatAcquire, whatRelease, whatFenced string
	won, undo                            func(*Held)
}

// NewClient returns a Client on directory dir whose flows run on ex, with
// the options of New (WithACL).
func NewClient(ex *executor.Executor, dir string, opts ...Option) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("lock: nil executor: %w", task.ErrInvalidArgument)
	}
	l, err := New(dir, opts...)
	if err != nil {
		return nil, err
	}
	what := "lock " + l.Dir() + ": "
	c := &Client{ex: ex, l: l, whatAcquire: what + "acquire", whatRelease: what + "release", whatFenced: what + "fenced write"}
	c.acq, c.tryAcq = l.acquire(false, &c.pending), l.acquire(true, &c.pending)
	c.setHooks()
	return c, nil
}

// Acquire waits for the lock until ctx ends (Lock.Acquire). When ctx ends
// first, the attempt is canceled, its contender node is deleted by a
// cleanup that outlives ctx, and Acquire returns task.ErrCanceled or
// task.ErrDeadlineExceeded (matching context.Canceled and
// context.DeadlineExceeded under errors.Is). If the lock was acquired
// just as ctx ended, it is released. On a Client that holds the lock it
// fails at once with ErrAlreadyHeld. While a delete of a node of this
// Client goes on in the background (a Release whose ctx ended first, the
// cleanup of an attempt that ended without the lock, the delete of a
// lost hold's node), Acquire and TryAcquire first wait for it, within
// their own ctx (see Client).
func (c *Client) Acquire(ctx context.Context) (*Held, error) {
	if c.zero() {
		return nil, errZeroClient
	}
	return c.acquire(ctx, c.acq)
}

// TryAcquire takes the lock only if no other contender is ahead
// (Lock.TryAcquire): it fails with ErrBusy, leaving no node behind,
// instead of waiting. ctx bounds the round trips it takes (a create and a
// listing, more after lost replies), as for Acquire. On a Client that
// holds the lock it fails at once with ErrAlreadyHeld.
func (c *Client) TryAcquire(ctx context.Context) (*Held, error) {
	if c.zero() {
		return nil, errZeroClient
	}
	return c.acquire(ctx, c.tryAcq)
}

func (c *Client) acquire(ctx context.Context, t task.Task[*Held]) (*Held, error) {
	if err := executor.CanBlock(); err != nil {
		return nil, err
	}
	// Re-entry is refused before waiting for pending deletes: at once, as
	// promised, whatever is still being deleted in the background.
	c.mu.Lock()
	if h := c.held; h != nil && !isDone(h) {
		c.mu.Unlock()
		return nil, fmt.Errorf("lock: %w: %s", ErrAlreadyHeld, h.Path())
	}
	c.mu.Unlock()
	if err := c.pending.Wait(ctx, c.whatAcquire); err != nil {
		return nil, err
	}
	return blocking.Take(ctx, c.whatAcquire, c.ex, t, c.won, c.undo)
}

// won records h, just acquired, as this Client's hold (blocking.Take's
// won); undo releases h, acquired as the caller's context ended (its
// undo). Made once, in NewClient.
func (c *Client) setHooks() {
	c.won = func(h *Held) {
		h.ex, h.cl = c.ex, c
		c.mu.Lock()
		// Goroutines acquiring at once may see their outcomes out of
		// order: one handed a Held whose node had gone (an operator's
		// delete) can wake after another that holds behind it. Of two
		// holds not known to have ended, the one with the higher token
		// is the live one (successive holders' tokens strictly
		// increase): keep it, or ErrAlreadyHeld would stop once the
		// lost one's loss is known, the Client still holding.
		if old := c.held; old == nil || old.isOver() || old.token < h.token || canary.On(bugKeepLastWon) {
			c.held = h
		}
		c.mu.Unlock()
	}
	c.undo = func(h *Held) { blocking.Background(c.ex, &c.pending, c.release(h)) }
}

// release is h's Release whose delete, when an ACL refuses it (the
// release fails with task.ErrNoAuth, and the delete goes on in the
// background: zkops.KeepDeleting), stays counted in pending until that
// delete ends, the node gone or the session ended (zkops.CountKept, as
// rwlock's and semaphore's Holding count it): the Client's next acquire
// waits for it rather than queue behind its own node, or, trying,
// report busy behind it.
func (c *Client) release(h *Held) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Run(s, h.Release(), func(v task.Unit, err error) {
			if errors.Is(err, task.ErrNoAuth) && !canary.On(bugRefusedReleaseUncounted) {
				zkops.CountKept(s, h.path, h.token, &c.pending)
			}
			k(v, err)
		})
	}
}

// isDone reports whether h has ended (released or lost). A hold that has
// not gets its node watched, as Done would, so that a loss is noticed; an
// ended one (the common case: released) needs nothing.
func isDone(h *Held) bool {
	if h.isOver() {
		return true
	}
	h.watchNodeOnce()
	return false
}

// Release releases a lock this Client acquired (Held.Release). The
// release is always started, whatever ctx: if ctx has ended, or ends
// before the delete is done, Release returns its error
// (task.ErrCanceled or task.ErrDeadlineExceeded) and the release goes on
// in the background: h's Done closes, the node is deleted, and this
// Client's next Acquire waits for that. A failure of the delete then goes
// to the executor's Config.OnError, since no caller hears it; a delete an
// ACL refuses (task.ErrNoAuth) is also sent again in the background until
// the ACL lets it or the session ends (Held.Release), and this Client's
// next Acquire waits for that too. A Held not taken through a
// Client on this executor (one on another executor, or Lock.Acquire run
// by hand) is refused with task.ErrInvalidArgument: run its own Release
// on the executor that took it; so is one another Client on this executor
// took (release it through that Client, whose next Acquire must wait for
// the delete).
func (c *Client) Release(ctx context.Context, h *Held) error {
	if c.zero() {
		return errZeroClient
	}
	if err := blocking.Owned(c.ex, exOf(h), errNotOurs); err != nil {
		return err
	}
	if h.cl != c {
		return errOtherClient
	}
	// From now on the Client holds nothing: its next Acquire waits for
	// this release (counted in pending by Give) rather than refusing with
	// ErrAlreadyHeld while the release waits in the executor's queue.
	// Counted from before held is cleared: an acquire of another
	// goroutine that finds it cleared before Give has counted the release
	// would otherwise go ahead, and queue (or, trying, fail with ErrBusy)
	// behind this very node.
	counted := c.pending.Add()
	c.mu.Lock()
	if c.held == h {
		c.held = nil
	}
	c.mu.Unlock()
	_, err := blocking.Give(ctx, c.whatRelease, c.ex, &c.pending, c.release(h))
	counted()
	return err
}

// Fenced runs ops in one multi that succeeds only while h still holds the
// lock (Held.Fenced), and waits for it until ctx ends.
func (c *Client) Fenced(ctx context.Context, h *Held, ops ...task.MultiOp) ([]task.MultiResult, error) {
	if c.zero() {
		return nil, errZeroClient
	}
	return blocking.Do(ctx, c.whatFenced, c.ex, exOf(h), errNotOurs, func() task.Task[[]task.MultiResult] { return h.Fenced(ops...) })
}

var errNotOurs = fmt.Errorf("lock: a lock not acquired through a Client on this executor: %w", task.ErrInvalidArgument)

var errOtherClient = fmt.Errorf("lock: a lock acquired through another Client: %w", task.ErrInvalidArgument)

func exOf(h *Held) *executor.Executor {
	if h == nil {
		return nil
	}
	return h.ex
}

// Lock is the task face this Client runs.
func (c *Client) Lock() *Lock {
	if c == nil {
		return nil
	}
	return c.l
}

// Executor is the executor the Client runs its flows on.
func (c *Client) Executor() *executor.Executor {
	if c == nil {
		return nil
	}
	return c.ex
}

// zero reports a nil or zero Client (not made by NewClient): its methods
// fail with errZeroClient.
func (c *Client) zero() bool { return c == nil || c.ex == nil || c.l == nil }

var errZeroClient = fmt.Errorf("lock: nil or zero Client (not made by NewClient): %w", task.ErrInvalidArgument)

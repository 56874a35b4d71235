package rwlock

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

// Client is the blocking face of an RWLock: the same verbs, each taking a
// context first and waiting for its outcome. Acquire and AcquireRead
// (and TryAcquire, TryAcquireRead) take the write or the read lock, and
// Release gives back the Held they return. Its methods are safe from any
// goroutine and need someone running the executor (executor.Run).
//
// As with sync.RWMutex, any number of goroutines may hold the read lock
// through one Client at once (each AcquireRead is a reader node of its
// own). It is not re-entrant, and it neither upgrades nor downgrades:
// Acquire and TryAcquire fail at once with ErrAlreadyHeld while this
// Client holds the lock in either mode (a write node queued behind our
// own read node would wait for it forever), and AcquireRead and
// TryAcquireRead while it holds the write lock (a read node behind our
// own write node would, too). Curator's
// InterProcessReadWriteLock lets the thread that holds the write lock take
// the read lock at once; this lock does not (see the package doc, Re-entry,
// upgrade and downgrade). As with sync.RWMutex, a goroutine that holds the read
// lock must not AcquireRead again: a writer that queued in between makes
// the second AcquireRead wait behind it, and the writer waits for the first.
//
// Nor does it queue behind a node of its own that it is still deleting
// in the background: Acquire, AcquireRead, TryAcquire and TryAcquireRead
// first wait, within their own ctx, for every such delete of this
// Client: a Release that went on after its ctx ended, the cleanup of an
// acquire that ended without the lock (deadline, cancel, error), the
// delete of the node of a hold lost while the session lived (someone
// else changed the node), the release of a lock taken just as ctx
// ended, and a Release's delete an ACL refused, until the node is gone.
// None of them waits for another contender, so a try still never
// waits behind one; an acquire still waiting for the lock is not among
// them, so goroutines reading through one Client never wait for each
// other's acquires.
//
// A nil or zero Client (not made by NewClient) fails every call with
// an error wrapping task.ErrInvalidArgument.
type Client struct {
	ex *executor.Executor
	l  *RWLock

	mu      sync.Mutex
	writer  *Held
	readers map[*Held]struct{}
	// pending counts the deletes of this Client's own nodes going on in
	// the background (see lock): the next acquire waits for them.
	pending blocking.Pending
}

// NewClient returns a Client on directory dir whose flows run on ex,
// with the options of New (WithACL).
func NewClient(ex *executor.Executor, dir string, opts ...Option) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("rwlock: nil executor: %w", task.ErrInvalidArgument)
	}
	l, err := New(dir, opts...)
	if err != nil {
		return nil, err
	}
	return &Client{ex: ex, l: l, readers: map[*Held]struct{}{}}, nil
}

// Acquire waits for the write lock until ctx ends (RWLock.Acquire). When
// ctx ends first, the attempt is canceled, its contender node is deleted
// by a cleanup that outlives ctx, and Acquire returns task.ErrCanceled or
// task.ErrDeadlineExceeded (matching context.Canceled and
// context.DeadlineExceeded under errors.Is). If the lock was acquired just
// as ctx ended, it is released. This Client's next acquire waits for that
// cleanup or release (see Client). It fails at once with ErrAlreadyHeld
// while this Client holds the lock in either mode.
func (m *Client) Acquire(ctx context.Context) (*Held, error) {
	if m.zero() {
		return nil, errZeroClient
	}
	return m.lock(ctx, Write, false)
}

// AcquireRead waits for the read lock until ctx ends, as Acquire does
// for the write lock. It waits behind any writer that queued before it, even while only
// readers hold. It fails at once with ErrAlreadyHeld while this Client
// holds the write lock.
func (m *Client) AcquireRead(ctx context.Context) (*Held, error) {
	if m.zero() {
		return nil, errZeroClient
	}
	return m.lock(ctx, Read, false)
}

// TryAcquire takes the write lock only if it need not wait
// (RWLock.TryAcquire): otherwise it fails with ErrBusy, leaving no node
// behind. ctx bounds its round trips, and its wait for this Client's own
// deletes (see Client), as for Acquire.
func (m *Client) TryAcquire(ctx context.Context) (*Held, error) {
	if m.zero() {
		return nil, errZeroClient
	}
	return m.lock(ctx, Write, true)
}

// TryAcquireRead takes the read lock only if no writer is queued below
// it (RWLock.TryAcquireRead): otherwise it fails with ErrBusy, leaving no node
// behind.
func (m *Client) TryAcquireRead(ctx context.Context) (*Held, error) {
	if m.zero() {
		return nil, errZeroClient
	}
	return m.lock(ctx, Read, true)
}

// lock takes the lock in mode (a try if try), once the Client's own
// nodes still being deleted are gone (pending): a Release going on in the
// background (also one whose delete an ACL refused, until the node is
// gone: zkops.Holding.CountKept), the cleanup of an attempt that failed
// (its node deleted as a flow of its own, counted from before the failed
// call returns), the delete that follows a lost hold (counted from before
// its Done closes), and the release of a lock taken just as ctx ended. None of them waits
// for another contender, so neither does a try for them; a waiting
// attempt is not counted, so one goroutine's acquire never waits for
// another's.
func (m *Client) lock(ctx context.Context, mode Mode, try bool) (*Held, error) {
	if err := executor.CanBlock(); err != nil {
		return nil, err
	}
	// Refused at once, as promised, whatever is still being deleted in
	// the background; and again after the wait, for a lock another
	// goroutine took meanwhile.
	if err := m.refuse(mode); err != nil {
		return nil, err
	}
	if err := m.pending.Wait(ctx, "rwlock "+m.l.Dir()+": acquire"); err != nil {
		return nil, err
	}
	if err := m.refuse(mode); err != nil {
		return nil, err
	}
	return blocking.Take(ctx, "rwlock "+m.l.Dir()+": acquire", m.ex, m.l.acquire(mode, try, &m.pending), func(h *Held) {
		h.ex = m.ex
		m.keep(h)
	}, func(h *Held) { blocking.Background(m.ex, &m.pending, h.Release()) })
}

// refuse says whether a lock in mode must be refused: see Client.
func (m *Client) refuse(mode Mode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.writer != nil && isDone(m.writer) {
		m.writer = nil
	}
	// In the order of the nodes, not of the map: checking a hold the
	// first time sets its watch, and one seed of a simulation is one
	// history.
	for _, h := range slices.SortedFunc(maps.Keys(m.readers), func(a, b *Held) int { return strings.Compare(a.Path(), b.Path()) }) {
		if isDone(h) {
			delete(m.readers, h)
		}
	}
	switch {
	case m.writer != nil:
		return fmt.Errorf("rwlock: %w: the write lock %s", ErrAlreadyHeld, m.writer.Path())
	case mode == Write && len(m.readers) > 0:
		return fmt.Errorf("rwlock: %w: %d read locks (no upgrade)", ErrAlreadyHeld, len(m.readers))
	}
	return nil
}

func (m *Client) keep(h *Held) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h.m = m
	if h.mode == Write {
		// Goroutines taking the write lock at once may see their
		// outcomes out of order: one handed a Held whose node had gone
		// (an operator's delete) can wake after the writer that holds
		// behind it. Of two write holds not known to have ended, the
		// one with the higher token is the live one (a writer's token
		// is above every earlier holder's): keep it, or ErrAlreadyHeld
		// would stop once the lost one's loss is known, the Client
		// still holding.
		if old := m.writer; old == nil || isDone(old) || old.token < h.token || canary.On(bugKeepLastWriter) {
			m.writer = h
		}
	} else {
		m.readers[h] = struct{}{}
	}
}

// forget drops h once it is released. Any goroutine.
func (m *Client) forget(h *Held) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.writer == h {
		m.writer = nil
	}
	delete(m.readers, h)
}

// isDone reports whether h has ended (released or lost).
func isDone(h *Held) bool {
	select {
	case <-h.Done():
		return true
	default:
		return false
	}
}

// Release releases a lock, read or write, this Client acquired
// (Held.Release). The release is always started, whatever ctx: if ctx
// has ended, or ends before the delete is done, Release returns its
// error (task.ErrCanceled or task.ErrDeadlineExceeded) and the release
// goes on in the background: h's Done closes, the node is deleted, and
// this Client's next Acquire, AcquireRead, TryAcquire or TryAcquireRead
// waits for that. A delete an ACL refuses (task.ErrNoAuth) is sent again
// in the background until the ACL lets it or the session ends
// (Held.Release), and this Client's next acquire waits for that too.
// A Held not taken through a Client on this executor
// (one on another executor, or RWLock.Acquire run by hand) is refused
// with task.ErrInvalidArgument: run its own Release on the executor that
// took it; so is one another Client on this executor took (release it
// through that Client, whose next acquire must wait for the delete).
func (m *Client) Release(ctx context.Context, h *Held) error {
	if m.zero() {
		return errZeroClient
	}
	if err := blocking.Owned(m.ex, exOf(h), errNotOurs); err != nil {
		return err
	}
	if h.m != m {
		return errOtherClient
	}
	// From now on the Client does not hold h: its next Acquire waits for
	// this release (counted in pending by Give) rather than refusing with
	// ErrAlreadyHeld while the release waits in the executor's queue.
	m.forget(h)
	_, err := blocking.Give(ctx, "rwlock "+m.l.Dir()+": release", m.ex, &m.pending, h.Release())
	return err
}

// Fenced runs ops in one multi that succeeds only while h still holds the
// lock (Held.Fenced), and waits for it until ctx ends.
func (m *Client) Fenced(ctx context.Context, h *Held, ops ...task.MultiOp) ([]task.MultiResult, error) {
	if m.zero() {
		return nil, errZeroClient
	}
	return blocking.Do(ctx, "rwlock "+m.l.Dir()+": fenced write", m.ex, exOf(h), errNotOurs, func() task.Task[[]task.MultiResult] { return h.Fenced(ops...) })
}

var errNotOurs = fmt.Errorf("rwlock: a lock not acquired through a Client on this executor: %w", task.ErrInvalidArgument)

var errOtherClient = fmt.Errorf("rwlock: a lock acquired through another Client: %w", task.ErrInvalidArgument)

func exOf(h *Held) *executor.Executor {
	if h == nil {
		return nil
	}
	return h.ex
}

// RWLock is the task face this Client runs.
func (m *Client) RWLock() *RWLock {
	if m == nil {
		return nil
	}
	return m.l
}

// Executor is the executor the Client runs its flows on.
func (m *Client) Executor() *executor.Executor {
	if m == nil {
		return nil
	}
	return m.ex
}

// zero reports a nil or zero Client (not made by NewClient): its methods
// fail with errZeroClient.
func (m *Client) zero() bool { return m == nil || m.ex == nil || m.l == nil }

var errZeroClient = fmt.Errorf("rwlock: nil or zero Client (not made by NewClient): %w", task.ErrInvalidArgument)

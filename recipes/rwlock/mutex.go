package rwlock

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// RWMutex is the blocking, context-first API over an RWLock, shaped like
// sync.RWMutex: Lock and RLock (and TryLock, TryRLock) take the write or
// the read lock, and the Held they return is given back with Unlock. Its
// methods are safe from any goroutine and need someone running the
// executor (executor.Run).
//
// As with sync.RWMutex, any number of goroutines may hold the read lock
// through one RWMutex at once (each RLock is a reader node of its own).
// It is not re-entrant, and it neither upgrades nor downgrades: Lock and
// TryLock fail at once with ErrAlreadyHeld while this RWMutex holds the
// lock in either mode (a write node queued behind our own read node would
// wait for it forever), and RLock and TryRLock while it holds the write
// lock (a read node behind our own write node would, too). Curator's
// InterProcessReadWriteLock lets the thread that holds the write lock take
// the read lock at once; this lock does not (see the package doc, Upgrade
// and downgrade). As with sync.RWMutex, a goroutine that holds the read
// lock must not RLock again: a writer that queued in between makes the
// second RLock wait behind it, and the writer waits for the first.
type RWMutex struct {
	ex *executor.Executor
	l  *RWLock

	mu      sync.Mutex
	writer  *Held
	readers map[*Held]struct{}
}

// NewRWMutex returns an RWMutex on directory dir whose flows run on ex,
// with the options of New (WithACL).
func NewRWMutex(ex *executor.Executor, dir string, opts ...Option) (*RWMutex, error) {
	if ex == nil {
		return nil, fmt.Errorf("rwlock: nil executor: %w", task.ErrInvalidArgument)
	}
	l, err := New(dir, opts...)
	if err != nil {
		return nil, err
	}
	return &RWMutex{ex: ex, l: l, readers: map[*Held]struct{}{}}, nil
}

// Lock waits for the write lock until ctx ends. When ctx ends first, the
// attempt is canceled, its contender node is deleted by a cleanup that
// outlives ctx, and Lock returns task.ErrCanceled or
// task.ErrDeadlineExceeded (matching context.Canceled and
// context.DeadlineExceeded under errors.Is). If the lock was acquired just
// as ctx ended, it is released. It fails at once with ErrAlreadyHeld while
// this RWMutex holds the lock in either mode.
func (m *RWMutex) Lock(ctx context.Context) (*Held, error) {
	return m.lock(ctx, Write, m.l.Acquire())
}

// RLock waits for the read lock until ctx ends, as Lock does for the write
// lock. It waits behind any writer that queued before it, even while only
// readers hold. It fails at once with ErrAlreadyHeld while this RWMutex
// holds the write lock.
func (m *RWMutex) RLock(ctx context.Context) (*Held, error) {
	return m.lock(ctx, Read, m.l.AcquireRead())
}

// TryLock takes the write lock only if it need not wait (see TryAcquire):
// otherwise it fails with ErrBusy, leaving no node behind. ctx bounds its
// round trips, as for Lock.
func (m *RWMutex) TryLock(ctx context.Context) (*Held, error) {
	return m.lock(ctx, Write, m.l.TryAcquire())
}

// TryRLock takes the read lock only if no writer is queued below it (see
// TryAcquireRead): otherwise it fails with ErrBusy, leaving no node
// behind.
func (m *RWMutex) TryRLock(ctx context.Context) (*Held, error) {
	return m.lock(ctx, Read, m.l.TryAcquireRead())
}

func (m *RWMutex) lock(ctx context.Context, mode Mode, t task.Task[*Held]) (*Held, error) {
	if err := m.refuse(mode); err != nil {
		return nil, err
	}
	type result struct {
		h   *Held
		err error
	}
	ch := make(chan result, 1)
	f := executor.Submit(m.ex, t, func(h *Held, err error) { ch <- result{h, err} })
	select {
	case r := <-ch:
		if r.h != nil {
			r.h.ex = m.ex
			m.keep(r.h)
		}
		return r.h, r.err
	case <-ctx.Done():
	}
	f.Cancel()
	r := <-ch // the flow ends promptly once canceled
	if r.err == nil {
		executor.Submit(m.ex, r.h.Release(), nil)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, task.ErrDeadlineExceeded
	}
	return nil, task.ErrCanceled
}

// refuse says whether a lock in mode must be refused: see RWMutex.
func (m *RWMutex) refuse(mode Mode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.writer != nil && isDone(m.writer) {
		m.writer = nil
	}
	for h := range m.readers {
		if isDone(h) {
			delete(m.readers, h)
		}
	}
	switch {
	case m.writer != nil:
		return fmt.Errorf("%w: the write lock %s", ErrAlreadyHeld, m.writer.Path())
	case mode == Write && len(m.readers) > 0:
		return fmt.Errorf("%w: %d read locks (no upgrade)", ErrAlreadyHeld, len(m.readers))
	}
	return nil
}

func (m *RWMutex) keep(h *Held) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h.m = m
	if h.mode == Write {
		m.writer = h
	} else {
		m.readers[h] = struct{}{}
	}
}

// forget drops h once it is released. Any goroutine.
func (m *RWMutex) forget(h *Held) {
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

// Unlock releases a lock taken with RWMutex (see Release), read or write.
// If ctx ends first, Unlock returns its error and the delete goes on in
// the background.
func (h *Held) Unlock(ctx context.Context) error {
	if h.ex == nil {
		return fmt.Errorf("rwlock: Unlock of a lock not taken with RWMutex (run Release instead): %w", task.ErrInvalidArgument)
	}
	_, err := executor.Await(ctx, h.ex, h.Release())
	return err
}

// Executor is the executor the RWMutex runs its flows on.
func (m *RWMutex) Executor() *executor.Executor { return m.ex }

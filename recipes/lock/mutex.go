package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// Mutex is the blocking, context-first API over a Lock: its methods are
// safe from any goroutine and need someone running the executor
// (executor.Run).
//
// A Mutex is not re-entrant: Go has no goroutine identity to tell a second
// Lock by the holder from one by another goroutine (sync.Mutex is not
// re-entrant either), and a holder that called Lock again would wait
// behind itself forever. So Lock and TryLock on a Mutex that holds the
// lock fail at once with ErrAlreadyHeld. To exclude goroutines of one
// process from each other as well, give each its own Mutex (each is a
// contender of its own) or put a sync.Mutex in front.
type Mutex struct {
	ex *executor.Executor
	l  *Lock

	mu   sync.Mutex
	held *Held // the lock this Mutex holds, until it ends
}

// NewMutex returns a Mutex on directory dir whose flows run on ex, with
// the options of New (WithACL).
func NewMutex(ex *executor.Executor, dir string, opts ...Option) (*Mutex, error) {
	if ex == nil {
		return nil, fmt.Errorf("lock: nil executor: %w", task.ErrInvalidArgument)
	}
	l, err := New(dir, opts...)
	if err != nil {
		return nil, err
	}
	return &Mutex{ex: ex, l: l}, nil
}

// Lock waits for the lock until ctx ends. When ctx ends first, the attempt
// is canceled, its contender node is deleted by a cleanup that outlives
// ctx, and Lock returns task.ErrCanceled or task.ErrDeadlineExceeded
// (matching context.Canceled and context.DeadlineExceeded under
// errors.Is). If the lock was acquired just as ctx ended, it is released.
// On a Mutex that holds the lock it fails at once with ErrAlreadyHeld.
func (m *Mutex) Lock(ctx context.Context) (*Held, error) {
	return m.lock(ctx, m.l.Acquire())
}

// TryLock takes the lock only if no other contender is ahead (see
// TryAcquire): it fails with ErrBusy, leaving no node behind, instead of
// waiting. ctx bounds the round trips it takes (a create and a listing,
// more after lost replies), as for Lock. On a Mutex that holds the lock it
// fails at once with ErrAlreadyHeld.
func (m *Mutex) TryLock(ctx context.Context) (*Held, error) {
	return m.lock(ctx, m.l.TryAcquire())
}

func (m *Mutex) lock(ctx context.Context, t task.Task[*Held]) (*Held, error) {
	m.mu.Lock()
	if h := m.held; h != nil && !isDone(h) {
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrAlreadyHeld, h.Path())
	}
	m.mu.Unlock()
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
			m.mu.Lock()
			m.held = r.h
			m.mu.Unlock()
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

// Unlock releases a lock taken with Mutex.Lock (see Release). If ctx ends
// first, Unlock returns its error and the delete goes on in the
// background.
func (h *Held) Unlock(ctx context.Context) error {
	if h.ex == nil {
		return fmt.Errorf("lock: Unlock of a lock not taken with Mutex.Lock (run Release instead): %w", task.ErrInvalidArgument)
	}
	_, err := executor.Await(ctx, h.ex, h.Release())
	return err
}

// Executor is the executor the Mutex runs its flows on.
func (m *Mutex) Executor() *executor.Executor { return m.ex }

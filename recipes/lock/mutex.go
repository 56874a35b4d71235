package lock

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// Mutex is the blocking, context-first API over a Lock: its methods are
// safe from any goroutine and need someone running the executor
// (executor.Run).
type Mutex struct {
	ex *executor.Executor
	l  *Lock
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
func (m *Mutex) Lock(ctx context.Context) (*Held, error) {
	type result struct {
		h   *Held
		err error
	}
	ch := make(chan result, 1)
	f := executor.Submit(m.ex, m.l.Acquire(), func(h *Held, err error) { ch <- result{h, err} })
	select {
	case r := <-ch:
		if r.h != nil {
			r.h.ex = m.ex
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

package semaphore

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// Semaphore is the blocking, context-first API over a Sem: its methods
// are safe from any goroutine and need someone running the executor
// (executor.Run). One Semaphore may acquire several leases (each Acquire
// is an acquirer of its own).
type Semaphore struct {
	ex *executor.Executor
	m  *Sem
}

// NewSemaphore returns a Semaphore of n leases on path whose flows run on
// ex, with the options of New (WithACL). A nil ex fails with
// task.ErrInvalidArgument; the other errors are New's.
func NewSemaphore(ex *executor.Executor, path string, n int, opts ...Option) (*Semaphore, error) {
	if ex == nil {
		return nil, fmt.Errorf("semaphore: nil executor: %w", task.ErrInvalidArgument)
	}
	m, err := New(path, n, opts...)
	if err != nil {
		return nil, err
	}
	return &Semaphore{ex: ex, m: m}, nil
}

// Acquire waits for a lease until ctx ends. When ctx ends first, the
// attempt is canceled, its lease node is deleted and the internal lock
// released by a cleanup that outlives ctx, and Acquire returns
// task.ErrCanceled or task.ErrDeadlineExceeded (matching
// context.Canceled and context.DeadlineExceeded under errors.Is). If the
// lease was acquired just as ctx ended, it is released.
func (b *Semaphore) Acquire(ctx context.Context) (*Lease, error) {
	ls, err := await(ctx, b.ex, oneOf(b.m.Acquire()))
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// TryAcquire takes a lease only if one is free now (see Sem.TryAcquire):
// it fails with ErrBusy, leaving no node behind, instead of waiting. ctx
// bounds the round trips it takes, as for Acquire.
func (b *Semaphore) TryAcquire(ctx context.Context) (*Lease, error) {
	ls, err := await(ctx, b.ex, oneOf(b.m.TryAcquire()))
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// AcquireMany waits for k leases (see Sem.AcquireMany) until ctx ends;
// if ctx ends first, or one acquire fails, the leases already acquired
// are released.
func (b *Semaphore) AcquireMany(ctx context.Context, k int) ([]*Lease, error) {
	return await(ctx, b.ex, b.m.AcquireMany(k))
}

// Executor is the executor the Semaphore runs its flows on.
func (b *Semaphore) Executor() *executor.Executor { return b.ex }

// Sem is the task face of the same semaphore.
func (b *Semaphore) Sem() *Sem { return b.m }

func oneOf(t task.Task[*Lease]) task.Task[[]*Lease] {
	return task.Map(t, func(l *Lease) []*Lease { return []*Lease{l} })
}

func await(ctx context.Context, ex *executor.Executor, t task.Task[[]*Lease]) ([]*Lease, error) {
	type result struct {
		ls  []*Lease
		err error
	}
	ch := make(chan result, 1)
	f := executor.Submit(ex, t, func(ls []*Lease, err error) { ch <- result{ls, err} })
	select {
	case r := <-ch:
		for _, l := range r.ls {
			l.ex = ex
		}
		return r.ls, r.err
	case <-ctx.Done():
	}
	f.Cancel()
	r := <-ch // the flow ends promptly once canceled
	if r.err == nil {
		for _, l := range r.ls {
			executor.Submit(ex, l.Release(), nil)
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, task.ErrDeadlineExceeded
	}
	return nil, task.ErrCanceled
}

// Return releases a lease taken with a Semaphore (see Release). If ctx
// ends first, Return returns its error and the delete goes on in the
// background.
func (l *Lease) Return(ctx context.Context) error {
	if l.ex == nil {
		return fmt.Errorf("semaphore: Return of a lease not taken with a Semaphore (run Release instead): %w", task.ErrInvalidArgument)
	}
	_, err := executor.Await(ctx, l.ex, l.Release())
	return err
}

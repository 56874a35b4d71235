package main

// Every call the recipe scenarios (scenario_recipes.go) make into the
// recipes' blocking, context-first API is in this file, so that a change
// of that API's names touches only these lines.

import (
	"context"
	"errors"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/recipes/semaphore"
)

// rwOps are one client's read-write lock operations: each takes the lock
// (write or read) and releases it.
type rwOps struct {
	Write, Read func(context.Context) error
}

func oursRWLock(ex *executor.Executor, dir string) (rwOps, error) {
	m, err := rwlock.NewClient(ex, dir)
	if err != nil {
		return rwOps{}, err
	}
	cycle := func(take func(context.Context) (*rwlock.Held, error)) func(context.Context) error {
		return func(ctx context.Context) error {
			h, err := take(ctx)
			if err != nil {
				return err
			}
			return m.Release(ctx, h)
		}
	}
	return rwOps{Write: cycle(m.Acquire), Read: cycle(m.AcquireRead)}, nil
}

// oursSemaphore returns one client's operation: acquire a lease of a
// semaphore of n leases on path, and return it.
func oursSemaphore(ex *executor.Executor, path string, n int) (func(context.Context) error, error) {
	s, err := semaphore.NewClient(ex, path, n)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		l, err := s.Acquire(ctx)
		if err != nil {
			return err
		}
		return s.Release(ctx, l)
	}, nil
}

// oursTryLock returns one client's operation: one try for the lock on
// dir, released at once when won; won says whether it was.
func oursTryLock(ex *executor.Executor, dir string) (func(context.Context) (won bool, err error), error) {
	m, err := lock.NewClient(ex, dir)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (bool, error) {
		h, err := m.TryAcquire(ctx)
		if errors.Is(err, lock.ErrBusy) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return true, m.Release(ctx, h)
	}, nil
}

// oursElection returns one client's operation: campaign in the election
// on dir until leading, then resign.
func oursElection(ex *executor.Executor, dir string) (func(context.Context) error, error) {
	e, err := election.NewClient(ex, dir)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		l, err := e.Campaign(ctx)
		if err != nil {
			return err
		}
		return e.Resign(ctx, l)
	}, nil
}

// queueOps are one client's queue operations (at-most-once mode, the
// default).
type queueOps struct {
	Put  func(context.Context, []byte) error
	Take func(context.Context) ([]byte, error)
}

func oursQueue(ex *executor.Executor, dir string) (queueOps, error) {
	cl, err := queue.NewClient(ex, dir)
	if err != nil {
		return queueOps{}, err
	}
	return queueOps{
		Put: func(ctx context.Context, data []byte) error { _, err := cl.Put(ctx, data); return err },
		Take: func(ctx context.Context) ([]byte, error) {
			it, err := cl.Take(ctx)
			if err != nil {
				return nil, err
			}
			return it.Data, nil
		},
	}, nil
}

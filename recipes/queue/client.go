package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// Client is the blocking, context-first API over a Queue: Put,
// PutPriority, Take and Ack, the task face's verbs. Its methods are safe
// from any goroutine and need someone running the executor (executor.Run).
// Each Client is one consumer (in at-least-once mode, one registration per
// session).
type Client struct {
	ex *executor.Executor
	q  *Queue
}

// NewClient returns a Client on directory dir whose flows run on ex, with
// the options of New.
func NewClient(ex *executor.Executor, dir string, opts ...Option) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("queue: nil executor: %w", task.ErrInvalidArgument)
	}
	q, err := New(dir, opts...)
	if err != nil {
		return nil, err
	}
	return &Client{ex: ex, q: q}, nil
}

// Queue is the Client's queue (for its task face).
func (cl *Client) Queue() *Queue { return cl.q }

// Executor is the executor the Client runs its flows on.
func (cl *Client) Executor() *executor.Executor { return cl.ex }

// Put adds data with priority 0 (see Queue.PutPriority) and returns the
// item's name. When ctx ends first the put is canceled and Put returns
// task.ErrCanceled or task.ErrDeadlineExceeded (matching
// context.Canceled and context.DeadlineExceeded): the item may or may not
// be in the queue.
func (cl *Client) Put(ctx context.Context, data []byte) (string, error) {
	return executor.Await(ctx, cl.ex, cl.q.Put(data))
}

// PutPriority adds data with the given priority; see Put.
func (cl *Client) PutPriority(ctx context.Context, data []byte, priority int) (string, error) {
	return executor.Await(ctx, cl.ex, cl.q.PutPriority(data, priority))
}

// Take waits until ctx ends for an item and takes it (see Queue.Take).
// When ctx ends first the take is canceled and Take returns
// task.ErrCanceled or task.ErrDeadlineExceeded; if the item was taken just
// as ctx ended, Take returns it (an at-most-once item would be lost
// otherwise).
func (cl *Client) Take(ctx context.Context) (*Item, error) {
	type result struct {
		it  *Item
		err error
	}
	ch := make(chan result, 1)
	f := executor.Submit(cl.ex, cl.q.Take(), func(it *Item, err error) { ch <- result{it, err} })
	select {
	case r := <-ch:
		return r.it, r.err
	case <-ctx.Done():
	}
	f.Cancel()
	if r := <-ch; r.err == nil {
		return r.it, nil
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, task.ErrDeadlineExceeded
	}
	return nil, task.ErrCanceled
}

// Ack acknowledges an item taken in at-least-once mode (see Item.Ack).
func (cl *Client) Ack(ctx context.Context, it *Item) error {
	_, err := executor.Await(ctx, cl.ex, it.Ack())
	return err
}

package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
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
	// What its calls are, for their errors ("queue <dir>: put", ...),
	// made once.
	put, ack, settle string
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
	what := "queue " + q.Dir()
	return &Client{ex: ex, q: q, put: what + ": put", ack: what + ": ack", settle: what + ": settle"}, nil
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
	if cl.zero() {
		return "", errNil("Client")
	}
	return blocking.Await(ctx, cl.put, cl.ex, cl.q.Put(data))
}

// PutPriority adds data with the given priority; see Put.
func (cl *Client) PutPriority(ctx context.Context, data []byte, priority int) (string, error) {
	if cl.zero() {
		return "", errNil("Client")
	}
	return blocking.Await(ctx, cl.put, cl.ex, cl.q.PutPriority(data, priority))
}

// Take waits until ctx ends for an item and takes it (see Queue.Take).
// When ctx ends first the take is canceled and Take returns
// task.ErrCanceled or task.ErrDeadlineExceeded; if the item was taken just
// as ctx ended, Take returns it, and if the take ended just as ctx did
// with an *UnknownTakeError (its item's only report), Take returns that
// error. A take whose delete (at-most-once) or
// move (at-least-once) was in flight when ctx ended settles it in the
// background and, if it took the item, gives it back: at-least-once to
// the queue under its own name, at-most-once put again at the end of its
// priority (delivered to no one, so still at most once); if the delete's
// reply was lost and its outcome stays unknown, the *UnknownTakeError,
// with the item, goes to the executor's Config.OnError. Nothing taken is
// lost to a cancellation or kept in flight until the session ends, as
// long as the executor runs until the give-back ends (Settle waits for
// that), with one exception at most once: a put-back whose outcome a lost
// connection or an expiry makes unknown is not sent again (that could
// queue the item twice), and goes to OnError as an *UnknownTakeError with
// the item's data. A nil ctx is refused (executor.ErrNilContext), nothing
// sent.
func (cl *Client) Take(ctx context.Context) (*Item, error) {
	if cl.zero() {
		return nil, errNil("Client")
	}
	if err := executor.CanBlock(); err != nil {
		return nil, err
	}
	if ctx == nil || ctx.Err() != nil { // nothing is sent: no item is taken (a nil ctx: executor.ErrNilContext)
		return nil, ctxErr(ctx, "queue "+cl.q.Dir()+": take")
	}
	type result struct {
		it  *Item
		err error
	}
	ch := make(chan result, 1)
	f := executor.Submit(cl.ex, cl.q.Take(), func(it *Item, err error) { ch <- result{it, err} })
	park.Wait(ctx, func() bool { return len(ch) > 0 || ctx.Err() != nil })
	select { // an outcome already in wins over a ctx that has ended too
	case r := <-ch:
		return r.it, r.err
	default:
		select {
		case r := <-ch:
			return r.it, r.err
		case <-ctx.Done():
		}
	}
	f.Cancel()
	park.Wait(ctx, func() bool { return len(ch) > 0 })
	r := <-ch
	var unknown *UnknownTakeError
	switch {
	case r.err == nil:
		return r.it, nil
	case errors.As(r.err, &unknown):
		// The take ended as ctx did, with an item whose take it could not
		// settle: the error is the item's only report.
		return nil, r.err
	}
	return nil, ctxErr(ctx, "queue "+cl.q.Dir()+": take")
}

// Settle waits until no take of the Client's queue has a delete or move
// in flight and no item a take gave back as it ended (see Take) is still
// being given back, or until ctx ends (then task.ErrCanceled or
// task.ErrDeadlineExceeded). Call it before closing the executor when
// Takes may have ended early: an at-most-once item whose take deleted it
// as the take's context ended is put back only by a running executor,
// and is lost if the process ends first. Work the executor's shutdown
// ends counts as settled. Called on an executor's goroutine, it returns
// executor.ErrOnExecutor.
func (cl *Client) Settle(ctx context.Context) error {
	if cl.zero() {
		return errNil("Client")
	}
	if err := executor.CanBlock(); err != nil {
		return err
	}
	return cl.q.settling.Wait(ctx, cl.settle)
}

// Ack acknowledges an item taken in at-least-once mode (see Item.Ack for
// what each error says). The ack is started whatever ctx: with ctx ended
// already, or ending before the ack does, Ack returns task.ErrCanceled or
// task.ErrDeadlineExceeded at once and the ack goes on in the background
// (a failure then goes to the executor's Config.OnError; an ack not
// applied leaves the item to come back to the queue once this consumer's
// session ends, as Item.Ack says). So `defer c.Ack(ctx, it)` acknowledges
// even when ctx ends during the work. Called on an executor's goroutine,
// it starts the ack and returns executor.ErrOnExecutor. An item another
// Client took is refused with an error wrapping task.ErrInvalidArgument
// (nothing is sent).
func (cl *Client) Ack(ctx context.Context, it *Item) error {
	if cl.zero() {
		return errNil("Client")
	}
	if it != nil && it.q != nil && it.q != cl.q {
		return errNotOurs
	}
	// blocking.Give: an ack whose failure comes as ctx ends is told to the
	// caller or, once it has left, to Config.OnError (never to no one).
	_, err := blocking.Give(ctx, cl.ack, cl.ex, nil, it.Ack())
	return err
}

// zero reports a Client not made by NewClient (nil, or a zero value).
func (cl *Client) zero() bool { return cl == nil || cl.ex == nil || cl.q.zero() }

// errNotOurs is Ack's error for an item another Client took.
var errNotOurs = fmt.Errorf("queue: an item taken through another Client: %w", task.ErrInvalidArgument)

// ctxErr is the error a blocking call returns when ctx ended first.
func ctxErr(ctx context.Context, what string) error { return blocking.CtxErr(ctx, what) }

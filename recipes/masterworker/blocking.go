package masterworker

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

// Serve runs the master on ex until ctx ends, running it again on each new
// session after an expiry. It returns task.ErrCanceled or
// task.ErrDeadlineExceeded when ctx ends (matching context.Canceled and
// context.DeadlineExceeded), or the error a retry could not settle. When
// ctx ends while the master is primary, it gives the mastership up (in
// the background, started whatever ctx), so a backup becomes primary at
// once rather than when this session ends. Someone must be running ex
// (executor.Run).
func (m *Master) Serve(ctx context.Context, ex *executor.Executor) error {
	if ex == nil {
		return fmt.Errorf("masterworker: nil executor: %w", task.ErrInvalidArgument)
	}
	_, err := executor.AwaitAcrossExpiry(ctx, ex, m.Run())
	return err
}

// Serve runs the worker on ex until ctx ends, registering again on each
// new session after an expiry. It returns as Master.Serve does. However it
// ends (ctx's end, a handler that stopped the worker, an error a retry
// could not settle), the worker's registration is deleted, as Run does
// (in the background when ctx has ended), so the primary moves the tasks
// assigned to it back at once rather than when its session ends. Served
// again on ex, the worker waits for that delete to end before it
// registers (Run).
func (w *Worker) Serve(ctx context.Context, ex *executor.Executor) error {
	if ex == nil {
		return fmt.Errorf("masterworker: nil executor: %w", task.ErrInvalidArgument)
	}
	_, err := executor.AwaitAcrossExpiry(ctx, ex, w.Run())
	return err
}

// Client is the blocking, context-first API for submitting tasks and
// waiting for their status. Its methods are safe from any goroutine and
// need someone running the executor (executor.Run).
type Client struct {
	sys *System
	ex  *executor.Executor
	id  string
	n   atomic.Uint64
	// inc tells this Client's submissions from those of every other
	// Client of the id, in this process or another, before or after:
	// the session its first submission ran on and a random number, set
	// on the executor's goroutine by the first Submit.
	inc string
}

// NewClient returns a client of sys whose flows run on ex. id names the
// client in its tasks' names (task-<id>_<...>): a host name or a
// service's name, say. Every submission's id is the client's id, the
// session its first submission ran on with a random number (drawn from
// the executor), and a counter, so it is unique whatever the id: a
// process started again with the id of one before it, or two Clients of
// one id, never meet each other's submissions.
func (sys *System) NewClient(ex *executor.Executor, id string) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("masterworker: nil executor: %w", task.ErrInvalidArgument)
	}
	if err := checkName("client id", id); err != nil {
		return nil, err
	}
	return &Client{sys: sys, ex: ex, id: id}, nil
}

// Submit submits data and returns the task's name. A submission that an
// expiry interrupted is looked for on the next session before it is
// made again, so a task is never submitted twice. When ctx ends first,
// Submit returns its error; the task may or may not have been submitted.
func (cl *Client) Submit(ctx context.Context, data []byte) (string, error) {
	if cl.zero() {
		return "", errZeroClient
	}
	n := cl.n.Add(1)
	id := ""
	t := func(s *task.Scope, k task.Cont[string]) {
		if id != "" {
			task.Run(s, cl.sys.Resubmit(id, data), k)
			return
		}
		if cl.inc == "" || canary.On(bugClientCounterOnly) {
			cl.inc = fmt.Sprintf("%016x%08x", uint64(s.Session().ID), uint32(s.Rand()))
			if canary.On(bugClientCounterOnly) {
				// The id and a counter, as before: a Client made again
				// with the id (a process started again) hands out the
				// submission ids of the one before.
				cl.inc = "0"
			}
		}
		id = cl.id + "_" + cl.inc + "_" + strconv.FormatUint(n, 10)
		task.Run(s, cl.sys.Submit(id, data), k)
	}
	return blocking.AwaitAcrossExpiry(ctx, "masterworker: submit", cl.ex, task.Task[string](t))
}

// Wait waits for the status of the named task, across session expiries,
// until ctx ends.
func (cl *Client) Wait(ctx context.Context, name string) (Result, error) {
	if cl.zero() {
		return Result{}, errZeroClient
	}
	return blocking.AwaitAcrossExpiry(ctx, "masterworker: wait "+name, cl.ex, cl.sys.Wait(name))
}

// zero reports a Client not made by NewClient (nil, or a zero value).
func (cl *Client) zero() bool { return cl == nil || cl.ex == nil || cl.sys == nil }

// errZeroClient is the error of a nil or zero Client's methods.
var errZeroClient = fmt.Errorf("masterworker: nil or zero Client (not made by NewClient): %w", task.ErrInvalidArgument)

// Do submits data and waits for its status. A failed handler is reported
// as a Result with Failed set and a nil error.
func (cl *Client) Do(ctx context.Context, data []byte) (Result, error) {
	name, err := cl.Submit(ctx, data)
	if err != nil {
		return Result{}, err
	}
	return cl.Wait(ctx, name)
}

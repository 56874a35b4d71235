package cache

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

// Client is the blocking face of a running cache (StartNode,
// StartChildren, StartTree): the same verbs as the task face, each taking
// a context first and waiting. Its methods are safe from any goroutine
// and need someone running the executor (executor.Run).
type Client struct {
	ex      *executor.Executor
	e       *engine
	current func() []Node
}

// StartChildren starts a ChildrenCache of dir (NewChildren) on ex and returns once its
// first snapshot is read. If the session expires before that, it starts
// again on the next session. When ctx ends first it returns
// task.ErrCanceled or task.ErrDeadlineExceeded (matching context.Canceled
// and context.DeadlineExceeded under errors.Is) and the cache is stopped.
func StartChildren(ctx context.Context, ex *executor.Executor, dir string, opts Options) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("cache: nil executor: %w", task.ErrInvalidArgument)
	}
	if _, err := NewChildren(dir, opts); err != nil {
		return nil, err
	}
	return watch(ctx, ex, func() (*engine, task.Task[task.Unit], func() []Node) {
		cc, _ := NewChildren(dir, opts)
		return cc.e, cc.e.start(), cc.Current
	})
}

// StartNode starts a NodeCache of path (NewNode) on ex; see StartChildren.
func StartNode(ctx context.Context, ex *executor.Executor, path string, opts Options) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("cache: nil executor: %w", task.ErrInvalidArgument)
	}
	if _, err := NewNode(path, opts); err != nil {
		return nil, err
	}
	return watch(ctx, ex, func() (*engine, task.Task[task.Unit], func() []Node) {
		nc, _ := NewNode(path, opts)
		cur := func() []Node {
			if n, ok := nc.Current(); ok {
				return []Node{n}
			}
			return nil
		}
		return nc.e, nc.e.start(), cur
	})
}

// StartTree starts a TreeCache of root (NewTree) on ex; see StartChildren.
func StartTree(ctx context.Context, ex *executor.Executor, root string, opts Options) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("cache: nil executor: %w", task.ErrInvalidArgument)
	}
	if _, err := NewTree(root, opts); err != nil {
		return nil, err
	}
	return watch(ctx, ex, func() (*engine, task.Task[task.Unit], func() []Node) {
		tc, _ := NewTree(root, opts)
		return tc.e, tc.e.start(), tc.Current
	})
}

func watch(ctx context.Context, ex *executor.Executor, mk func() (*engine, task.Task[task.Unit], func() []Node)) (*Client, error) {
	for {
		e, start, cur := mk()
		_, err := executor.Await(ctx, ex, start)
		switch {
		case err == nil:
			return &Client{ex: ex, e: e, current: cur}, nil
		case errors.Is(err, task.ErrSessionExpired) && ctx.Err() == nil:
			continue
		default:
			executor.Submit(ex, e.stop(), nil) // in case it started just as ctx ended
			return nil, err
		}
	}
}

// Next blocks until the cache's snapshot differs from the one the
// previous Next returned and returns the difference (see
// ChildrenCache.Next); it fails with the cache's error once it has ended,
// or with ctx's.
func (w *Client) Next(ctx context.Context) (Change, error) {
	return executor.Await(ctx, w.ex, w.e.next())
}

// Current returns the cached nodes, sorted by path.
func (w *Client) Current() []Node { return w.current() }

// Done is closed when the cache ends; Err says why.
func (w *Client) Done() <-chan struct{} { return w.e.done }

// Err is nil while the cache runs, then why it ended.
func (w *Client) Err() error { return w.e.Err() }

// Stop stops the cache and returns once it has stopped, or ctx's error;
// the stop is started whatever ctx, so a ctx that has ended still stops
// the cache, in the background (Done closes).
func (w *Client) Stop(ctx context.Context) error {
	_, err := blocking.Give(ctx, w.ex, nil, w.e.stop())
	if errors.Is(err, task.ErrClosed) {
		return nil // the executor stopped: so did the cache
	}
	return err
}

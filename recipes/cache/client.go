package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

// Client is the blocking face of a cache (NewNodeClient,
// NewChildrenClient, NewTreeClient): the same verbs as the task face,
// each taking a context first and waiting. Its methods are safe from any
// goroutine and need someone running the executor (executor.Run).
type Client struct {
	ex *executor.Executor
	mk func() (*engine, func() []Node) // a new cache, not started

	mu       sync.Mutex
	starting bool
	e        *engine // set once Start succeeds
	current  func() []Node
}

var errNotStarted = fmt.Errorf("cache: client not started: %w", task.ErrInvalidArgument)

// NewChildrenClient returns a Client of a ChildrenCache of dir
// (NewChildren) that runs on ex; it does nothing until Start.
func NewChildrenClient(ex *executor.Executor, dir string, opts ...Option) (*Client, error) {
	if _, err := NewChildren(dir, opts...); err != nil {
		return nil, err
	}
	return newClient(ex, func() (*engine, func() []Node) {
		cc, _ := NewChildren(dir, opts...)
		return cc.e, cc.Current
	})
}

// NewNodeClient returns a Client of a NodeCache of path (NewNode); see
// NewChildrenClient. Its Current has one node, or none while the node
// does not exist.
func NewNodeClient(ex *executor.Executor, path string, opts ...Option) (*Client, error) {
	if _, err := NewNode(path, opts...); err != nil {
		return nil, err
	}
	return newClient(ex, func() (*engine, func() []Node) {
		nc, _ := NewNode(path, opts...)
		return nc.e, func() []Node {
			if n, ok := nc.Current(); ok {
				return []Node{n}
			}
			return nil
		}
	})
}

// NewTreeClient returns a Client of a TreeCache of root (NewTree); see
// NewChildrenClient.
func NewTreeClient(ex *executor.Executor, root string, opts ...Option) (*Client, error) {
	if _, err := NewTree(root, opts...); err != nil {
		return nil, err
	}
	return newClient(ex, func() (*engine, func() []Node) {
		tc, _ := NewTree(root, opts...)
		return tc.e, tc.Current
	})
}

func newClient(ex *executor.Executor, mk func() (*engine, func() []Node)) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("cache: nil executor: %w", task.ErrInvalidArgument)
	}
	return &Client{ex: ex, mk: mk}, nil
}

// Start starts the cache and returns once its first snapshot is read. If
// the session expires before that, it waits on for the cache's first
// snapshot on the next session (the same cache, which follows the new
// session itself: what OnEvent hears stays one history).
// When ctx ends first it returns task.ErrCanceled or
// task.ErrDeadlineExceeded (matching context.Canceled and
// context.DeadlineExceeded under errors.Is), the cache is stopped, and
// Start may be called again. A Client runs one cache: Start after a Start
// that succeeded, or while one runs, fails with task.ErrInvalidArgument.
func (w *Client) Start(ctx context.Context) error {
	if w == nil || w.ex == nil || w.mk == nil {
		return fmt.Errorf("cache: nil or zero Client (not made by its constructor): %w", task.ErrInvalidArgument)
	}
	w.mu.Lock()
	if w.starting || w.e != nil {
		w.mu.Unlock()
		return fmt.Errorf("cache: client already started: %w", task.ErrInvalidArgument)
	}
	w.starting = true
	w.mu.Unlock()
	// One cache across expiries: a start cut short by one waits on for the
	// cache's first snapshot on the next session (the cache follows it
	// itself), so that what OnEvent hears is one history.
	e, cur := w.mk()
	t := e.startWith(true)
	for {
		_, err := blocking.Await(ctx, "cache: start", w.ex, t)
		if err != nil && errors.Is(err, task.ErrSessionExpired) {
			if ctx.Err() == nil {
				t = e.awaitFirst()
				continue
			}
			// ctx ended before the expiry's outcome was handed over:
			// Start ends with ctx's error, as it would have a moment later.
			err = blocking.CtxErr(ctx, "cache: start")
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.starting = false
		if err != nil {
			executor.Submit(w.ex, e.stop(), nil) // in case it started just as ctx ended
			return err
		}
		w.e, w.current = e, cur
		return nil
	}
}

// started returns the cache Start started, or nil (none yet, or a nil
// Client: its methods then answer as before Start).
func (w *Client) started() (*engine, func() []Node) {
	if w == nil {
		return nil, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.e, w.current
}

// Next blocks until the cache's snapshot differs from the one the
// previous Next returned and returns the difference (see
// ChildrenCache.Next); it fails with the cache's error once it has ended,
// or with ctx's (a session expiry ends neither: it waits on for the
// cache's snapshot on the next session). A Next that returns ctx's error returns no difference:
// the next Next reports what it would have (also when ctx ended just as
// the difference was handed to it: no other goroutine's Next is served
// until it has been handed back).
func (w *Client) Next(ctx context.Context) (Change, error) {
	e, _ := w.started()
	if e == nil {
		return Change{}, errNotStarted
	}
	return e.awaitNext(ctx, w.ex, "cache: next")
}

// awaitNext runs a Next on ex for a blocking caller and waits for it
// until ctx ends; a difference handed over just as ctx ended is handed
// back (giveBack), so that the next Next returns it too. Until the
// caller has taken its difference or given it back, no other Next is
// served (handed): another goroutine's would be served from the
// snapshot this one was handed.
func (e *engine) awaitNext(ctx context.Context, ex *executor.Executor, what string) (Change, error) {
	end := func(back bool) func(served) {
		return func(sv served) {
			executor.Submit(ex, task.Func(func(*task.Scope) (task.Unit, error) {
				e.handed(sv, back)
				return task.Unit{}, nil
			}), nil)
		}
	}
	for {
		sv, err := blocking.Take(ctx, what, ex, e.nextServed(), end(false), end(true))
		// The flow is bound to the session: an expiry ends it, not the
		// cache, which follows the next session itself. A Next it ended
		// was served nothing (its waiter is abandoned): wait on.
		if err == nil || !errors.Is(err, task.ErrSessionExpired) {
			return sv.ch, err
		}
		switch {
		case e.Err() != nil:
			return Change{}, e.Err()
		case ctx.Err() != nil:
			return Change{}, blocking.CtxErr(ctx, what)
		}
	}
}

// Current returns the cached nodes, sorted by path (none before Start).
// It may hold changes no Next has reported yet: to wait for a state and
// judge what was reported on the way, read Next until a Change's Nodes
// show it.
func (w *Client) Current() []Node {
	_, cur := w.started()
	if cur == nil {
		return nil
	}
	return cur()
}

// Done is closed when the cache ends; Err says why. It is nil until
// Start succeeds.
func (w *Client) Done() <-chan struct{} {
	e, _ := w.started()
	if e == nil {
		return nil
	}
	return e.done
}

// Err is nil until the cache ends, then why it ended.
func (w *Client) Err() error {
	e, _ := w.started()
	if e == nil {
		return nil
	}
	return e.Err()
}

// Stop stops the cache and returns once it has stopped, or ctx's error;
// the stop is started whatever ctx, so a ctx that has ended still stops
// the cache, in the background (Done closes). Until Start has succeeded
// it does nothing: end Start's ctx to stop a Start under way.
func (w *Client) Stop(ctx context.Context) error {
	e, _ := w.started()
	if e == nil {
		return nil
	}
	_, err := blocking.Give(ctx, "cache: stop", w.ex, nil, e.stop())
	if errors.Is(err, task.ErrClosed) {
		return nil // the executor stopped: so did the cache
	}
	return err
}

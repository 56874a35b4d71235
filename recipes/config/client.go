package config

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

// Reader is the blocking face of a Watcher (Client.Watch,
// Client.WatchDir): its methods
// are safe from any goroutine and need someone running the executor
// (executor.Run).
type Reader struct {
	ex     *executor.Executor
	w      *Watcher
	notify chan struct{}

	mu       sync.Mutex
	latest   Snapshot
	seq      uint64 // deliveries so far
	returned uint64 // seq as of the last Next
}

// Client is the blocking face of the config recipe for the configuration
// at one root: WatchDir, Update and UpdateMarked for root's entries, Watch
// for root's own data (a configuration kept in one node), each taking a
// context first and waiting. Its methods are safe from any goroutine and
// need someone running the executor (executor.Run).
type Client struct {
	ex   *executor.Executor
	root string
	opts []Option
}

// NewClient returns a Client of the configuration at root whose flows run
// on ex; opts (WithACL) apply to the nodes its updates create. Nothing is
// sent: root is created by the first update, and readers follow its
// creation. An invalid root fails with task.ErrInvalidPath, a nil ex or
// option with task.ErrInvalidArgument.
func NewClient(ex *executor.Executor, root string, opts ...Option) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("config: nil executor: %w", task.ErrInvalidArgument)
	}
	if err := task.ValidatePath(root, false); err != nil {
		return nil, fmt.Errorf("config: root: %w", err)
	}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("config: nil option: %w", task.ErrInvalidArgument)
		}
	}
	return &Client{ex: ex, root: root, opts: opts}, nil
}

// errNil is the error of a method called on a nil Client or
// Reader: bad input, refused as a nil executor is.
func errNil(what string) error {
	return fmt.Errorf("config: nil %s: %w", what, task.ErrInvalidArgument)
}

// Root is the root of the configuration the Client reads and writes.
func (c *Client) Root() string { return c.root }

// WatchDir starts following the configuration of root's entries
// (WatchDir with opts) and returns once the first snapshot has been read.
// If the session expires before that, it starts again on the next
// session. When ctx ends first it returns task.ErrCanceled or
// task.ErrDeadlineExceeded.
func (c *Client) WatchDir(ctx context.Context, opts DirOptions) (*Reader, error) {
	if c == nil {
		return nil, errNil("Client")
	}
	return open(ctx, c.ex, func(h func(Snapshot)) task.Task[*Watcher] { return WatchDir(c.root, opts, h) })
}

// Watch is WatchDir for root's own data (Watch).
func (c *Client) Watch(ctx context.Context) (*Reader, error) {
	if c == nil {
		return nil, errNil("Client")
	}
	return open(ctx, c.ex, func(h func(Snapshot)) task.Task[*Watcher] { return Watch(c.root, h) })
}

// Update writes values as root's entries (Update) and waits for the
// outcome. When ctx ends first it returns ctx's error, when the
// session expires first task.ErrSessionExpired, and when the executor
// closes first task.ErrClosed: the multi may have been applied or not. Calling Update again with the same values leaves them
// either way.
func (c *Client) Update(ctx context.Context, values map[string][]byte) error {
	if c == nil {
		return errNil("Client")
	}
	_, err := blocking.Await(ctx, "config "+c.root+": update", c.ex, Update(c.root, values, c.opts...))
	return err
}

// UpdateMarked writes values as root's entries with the marker protocol
// (UpdateMarked) and waits for the outcome. With a ctx that has ended it
// does nothing and returns ctx's error (with a nil ctx,
// executor.ErrNilContext). Once started, the update is not
// abandoned half-way, with the marker standing: when ctx ends first,
// UpdateMarked returns its error and the update goes on in the
// background until it is done, resumed on the next session after an
// expiry (the same task value, which knows its marker); a failure then
// goes to the executor's Config.OnError. The executor's close stops it
// where it is, as a crash does: it returns task.ErrClosed, and a marker
// it made stands (the package doc, The invalid marker). A write refused
// for good (an
// entry over the data limit) is rolled back and the marker deleted
// (UpdateMarked, the task): the update is not applied, and the error says
// so; a write an ACL refuses waits until the ACL lets it.
func (c *Client) UpdateMarked(ctx context.Context, values map[string][]byte) error {
	if c == nil {
		return errNil("Client")
	}
	if ctx == nil || ctx.Err() != nil { // a nil ctx: executor.ErrNilContext
		return blocking.CtxErr(ctx, "config "+c.root+": update")
	}
	_, err := blocking.GiveAcrossExpiry(ctx, "config "+c.root+": update", c.ex, nil, UpdateMarked(c.root, values, c.opts...))
	return err
}

func open(ctx context.Context, ex *executor.Executor, mk func(func(Snapshot)) task.Task[*Watcher]) (*Reader, error) {
	if ex == nil {
		return nil, fmt.Errorf("config: nil executor: %w", task.ErrInvalidArgument)
	}
	for {
		r := &Reader{ex: ex, notify: make(chan struct{}, 1)}
		// A watcher started just as ctx ended is stopped (no one could).
		w, err := blocking.Take(ctx, "config: watch", ex, mk(r.update), nil, func(w *Watcher) {
			executor.Submit(ex, w.Stop(), nil)
		})
		switch {
		case err == nil:
			r.w = w
			return r, nil
		case errors.Is(err, task.ErrSessionExpired) && ctx.Err() == nil:
			continue
		default:
			return nil, err
		}
	}
}

// update is the Watcher's handler (executor goroutine).
func (r *Reader) update(s Snapshot) {
	r.mu.Lock()
	r.latest = s
	r.seq++
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// Next returns the latest configuration once it is newer than the one the
// previous Next returned (the first Next returns the first one delivered).
// Versions coalesce: a slow reader gets the latest, never a queue. It
// fails with the watcher's error once it has ended, or with ctx's; a nil
// ctx is refused (executor.ErrNilContext), a version ready or not.
func (r *Reader) Next(ctx context.Context) (Snapshot, error) {
	if r == nil || r.w == nil {
		return Snapshot{}, errNil("Reader")
	}
	// On an executor's goroutine the wait would stop the goroutine that
	// delivers.
	if err := executor.CanBlock(); err != nil {
		return Snapshot{}, err
	}
	if ctx == nil {
		return Snapshot{}, blocking.CtxErr(ctx, "config reader: next")
	}
	for {
		r.mu.Lock()
		if r.seq > r.returned {
			r.returned = r.seq
			s := r.latest
			r.mu.Unlock()
			return s, nil
		}
		r.mu.Unlock()
		park.Wait(ctx, func() bool { return len(r.notify) > 0 || park.Closed(r.w.Done()) || ctx.Err() != nil })
		// A delivery first, then the watcher's end, then ctx's: when
		// several are ready, the same one wins every time (a simulation
		// replays).
		select {
		case <-r.notify:
			continue
		default:
		}
		select {
		case <-r.notify:
			continue
		case <-r.w.Done():
		case <-ctx.Done():
			if !park.Closed(r.w.Done()) {
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					return Snapshot{}, task.ErrDeadlineExceeded
				}
				return Snapshot{}, task.ErrCanceled
			}
		}
		r.mu.Lock()
		more := r.seq > r.returned
		r.mu.Unlock()
		if !more {
			return Snapshot{}, r.w.Err()
		}
	}
}

// Latest returns the configuration last delivered, and false before the
// first delivery.
func (r *Reader) Latest() (Snapshot, bool) {
	if r == nil || r.w == nil {
		return Snapshot{}, false
	}
	return r.w.Latest()
}

// Stop stops following the configuration (Watcher.Stop) and returns once
// stopped, or ctx's error; the stop is started whatever ctx, so a ctx
// that has ended still stops the watcher, in the background.
func (r *Reader) Stop(ctx context.Context) error {
	if r == nil || r.w == nil {
		return errNil("Reader")
	}
	_, err := blocking.Give(ctx, "config reader: stop", r.ex, nil, r.w.Stop())
	if errors.Is(err, task.ErrClosed) {
		return nil
	}
	return err
}

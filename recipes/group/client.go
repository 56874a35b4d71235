package group

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

// bugLostWakeUp, a known bug of the Watcher (see internal/canary): its
// notify channel has no room, so a report made while Next waits wakes no
// one: Next blocks past a difference until its ctx ends, and returns that
// error.
const bugLostWakeUp canary.Name = "group/watcher-lost-wakeup"

// Client is the blocking, context-first API over a Group: its methods are
// safe from any goroutine and need someone running the executor
// (executor.Run). When ctx ends first, a call's flow is canceled and the
// call returns task.ErrCanceled or task.ErrDeadlineExceeded (matching
// context.Canceled and context.DeadlineExceeded under errors.Is).
type Client struct {
	ex *executor.Executor
	g  *Group
	// What its calls are, for their errors ("group <dir>: join", ...),
	// made once.
	join, leave, watch string
}

// NewClient returns a Client of the group under dir whose flows run on ex,
// with the options of New (WithACL).
func NewClient(ex *executor.Executor, dir string, opts ...Option) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("group: nil executor: %w", task.ErrInvalidArgument)
	}
	g, err := New(dir, opts...)
	if err != nil {
		return nil, err
	}
	what := "group " + g.Dir()
	return &Client{ex: ex, g: g, join: what + ": join", leave: what + ": leave", watch: what + ": watch"}, nil
}

// Group is the group the Client runs.
func (c *Client) Group() *Group { return c.g }

// Join registers a member (Group.Join). If the session expires meanwhile
// it joins again on the next session. If ctx ends first, a node the flow
// made is deleted; if the member joined just as ctx ended, it leaves.
func (c *Client) Join(ctx context.Context, id string, data []byte) (*Member, error) {
	if c.zero() {
		return nil, errNil("Client")
	}
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	for {
		m, err := c.joinOnce(ctx, id, data)
		if errors.Is(err, task.ErrSessionExpired) && ctx.Err() == nil {
			continue
		}
		return m, err
	}
}

func (c *Client) joinOnce(ctx context.Context, id string, data []byte) (*Member, error) {
	return blocking.Take(ctx, c.join, c.ex, c.g.Join(id, data), nil, func(m *Member) { executor.Submit(c.ex, m.Leave(), nil) })
}

// Leave ends m's membership (Member.Leave); m must have joined on this
// Client's executor (through any Client or task on it), or Leave does
// nothing and returns an error wrapping task.ErrInvalidArgument. After
// the executor has closed it returns nil (the session ended, and the
// node with it). The leave is always started, whatever ctx: if ctx has ended, or ends before the delete is done,
// Leave returns its error (task.ErrCanceled or task.ErrDeadlineExceeded)
// and the leave goes on in the background (m's Done closes, the node is
// deleted).
func (c *Client) Leave(ctx context.Context, m *Member) error {
	if c.zero() {
		return errNil("Client")
	}
	if m == nil || m.g == nil {
		return errNil("Member")
	}
	if err := blocking.Owned(c.ex, exOf(m), errNotOurs); err != nil {
		return err
	}
	_, err := blocking.Give(ctx, c.leave, c.ex, nil, m.Leave())
	if errors.Is(err, task.ErrClosed) {
		return nil // the executor stopped: the session ended, and the node went with it
	}
	return err
}

// zero reports a Client not made by NewClient (nil, or a zero value).
func (c *Client) zero() bool { return c == nil || c.ex == nil || c.g == nil }

// errNotOurs is the error of Leave given a member of another executor.
var errNotOurs = fmt.Errorf("group: a member joined on another executor: %w", task.ErrInvalidArgument)

// exOf is the executor m joined on (nil if it is another runtime).
func exOf(m *Member) *executor.Executor {
	ex, _ := m.rt.(*executor.Executor)
	return ex
}

// Watch starts following the group's members (Group.Watch) and returns
// once the first listing is known; read the changes with Watcher.Next and
// stop with Watcher.Stop. If the session expires before the first
// listing, it starts again on the next session.
func (c *Client) Watch(ctx context.Context) (*Watcher, error) {
	if c.zero() {
		return nil, errNil("Client")
	}
	for {
		w, err := c.watchOnce(ctx)
		if errors.Is(err, task.ErrSessionExpired) && ctx.Err() == nil {
			continue
		}
		return w, err
	}
}

func (c *Client) watchOnce(ctx context.Context) (*Watcher, error) {
	room := 1
	if canary.On(bugLostWakeUp) {
		room = 0
	}
	w := &Watcher{ex: c.ex, notify: make(chan struct{}, room)}
	v, err := blocking.Take(ctx, c.watch, c.ex, c.g.Watch(w.update), nil, func(v *View) { executor.Submit(c.ex, v.Stop(), nil) }) // started just as ctx ended
	if err != nil {
		return nil, err
	}
	w.v = v
	return w, nil
}

// Watcher is the blocking side of a View. Next coalesces: it returns the
// difference between the members it returned last and the latest report,
// so a slow reader never blocks the executor and nothing is queued
// without bound; a member that joined and left between two calls of Next
// is not seen. Safe from any goroutine but the executor's: called while
// running a job of an executor (a task body, a callback), Next and Stop
// return executor.ErrOnExecutor at once, as every blocking call does (Stop
// after starting the stop). Only Client.Watch makes a Watcher: on a nil
// or zero one, Next and Stop return an error wrapping
// task.ErrInvalidArgument and Members returns nil.
type Watcher struct {
	ex     *executor.Executor
	v      *View
	notify chan struct{}

	mu     sync.Mutex
	latest []string
	seen   []string
	first  bool // the first Next has returned
}

// update is the View's report function (executor goroutine).
func (w *Watcher) update(ch Change) {
	w.mu.Lock()
	w.latest = ch.Members
	w.mu.Unlock()
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// Next returns the members and who joined and left since the previous
// Next (for the first call, since nothing: everyone is in Added). It
// blocks until there is a difference, the view ends (its error), or ctx
// ends. On an executor's goroutine, where it would wait for the reports
// that goroutine makes, it fails at once with executor.ErrOnExecutor; a
// nil ctx is refused (executor.ErrNilContext), a difference ready or not.
func (w *Watcher) Next(ctx context.Context) (Change, error) {
	if w.zero() {
		return Change{}, errNil("Watcher")
	}
	if err := executor.CanBlock(); err != nil {
		return Change{}, err
	}
	if ctx == nil {
		return Change{}, blocking.CtxErr(ctx, "group watcher: next")
	}
	for {
		w.mu.Lock()
		added, removed := diff(w.seen, w.latest)
		if !w.first || len(added) > 0 || len(removed) > 0 {
			w.first = true
			w.seen = w.latest
			ch := Change{Members: slices.Clone(w.latest), Added: added, Removed: removed}
			w.mu.Unlock()
			return ch, nil
		}
		w.mu.Unlock()
		park.Wait(ctx, func() bool { return len(w.notify) > 0 || park.Closed(w.v.Done()) || ctx.Err() != nil })
		// A report first, then the view's end, then ctx's: when several
		// are ready, the same one wins every time (a simulation replays).
		select {
		case <-w.notify:
			continue
		default:
		}
		select {
		case <-w.notify:
			continue
		case <-w.v.Done():
		case <-ctx.Done():
			if !park.Closed(w.v.Done()) {
				return Change{}, blocking.CtxErr(ctx, "group watcher: next")
			}
		}
		// deliver what arrived before the end, then the error
		w.mu.Lock()
		added, removed = diff(w.seen, w.latest)
		w.mu.Unlock()
		if len(added) == 0 && len(removed) == 0 {
			return Change{}, w.v.Err()
		}
	}
}

// Members returns the members as last reported (nil for a nil or zero
// Watcher).
func (w *Watcher) Members() []string {
	if w.zero() {
		return nil
	}
	return w.v.Members()
}

// Stop stops the view (View.Stop). It returns once the view has
// stopped, or ctx's error; the stop is started whatever ctx, so a ctx
// that has ended still stops the view, in the background.
func (w *Watcher) Stop(ctx context.Context) error {
	if w.zero() {
		return errNil("Watcher")
	}
	_, err := blocking.Give(ctx, "group watcher: stop", w.ex, nil, w.v.Stop())
	if errors.Is(err, task.ErrClosed) {
		return nil // the executor stopped: so did the view
	}
	return err
}

// zero reports a Watcher not made by Client.Watch (nil, or a zero value).
func (w *Watcher) zero() bool { return w == nil || w.ex == nil || w.v == nil }

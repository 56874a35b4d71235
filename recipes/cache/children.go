package cache

import (
	"context"
	"fmt"

	"github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// ChildrenCache follows the children of one directory (and, with
// WithData, their data) on one executor, across reconnects and
// session expiries, until Stop. Start, Next and Stop are tasks run on the
// executor; Current, Done and Err are safe from any goroutine.
type ChildrenCache struct{ e *engine }

// NewChildren returns a cache of dir's children; it does nothing until
// Start. An invalid path fails with an error wrapping task.ErrInvalidPath;
// a nil WithOnEvent or WithOnSynced function is allowed; WithRecursive or
// a nil Option fails with task.ErrInvalidArgument.
func NewChildren(dir string, opts ...Option) (*ChildrenCache, error) {
	if err := task.ValidatePath(dir, false); err != nil {
		return nil, fmt.Errorf("cache: directory: %w", err)
	}
	o, err := newOptions(opts, false)
	if err != nil {
		return nil, err
	}
	return &ChildrenCache{e: newEngine(dir, "", o)}, nil
}

// Dir is the directory the cache follows.
func (c *ChildrenCache) Dir() string { return c.e.dir }

// Start returns a task that starts the cache and succeeds with it once the
// first listing and every child have been read (a consistent snapshot).
// The cache then runs on its own flows (bound to the executor's session,
// restarted on each new session), not in the caller's scope: it runs until
// Stop, the executor's close, or an error no retry settles. If the
// caller's scope ends before the first snapshot, the cache is stopped and
// Start fails with the scope's error. A missing directory has no children;
// the cache waits for it to be created. A second Start fails with
// ErrStarted.
func (c *ChildrenCache) Start() task.Task[*ChildrenCache] {
	return combinators.Map(c.e.start(), func(task.Unit) *ChildrenCache { return c })
}

// Next returns a task that waits until the cache's consistent snapshot
// differs from the one the previous Next returned (for the first Next: from
// an empty directory, so every child is Added) and yields the difference:
// what was added, removed, changed and re-created since the last read.
// Changes coalesce: a child added and removed between two Nexts is not
// seen; nothing is queued without bound. Next is meant for one reader at a
// time; concurrent Nexts are served in turn, each with what changed since
// the one before. Next answers only at a consistent snapshot: while
// changes keep coming faster than the cache reads them, it waits for the
// first quiet moment. It fails with the cache's error once the cache has
// ended, and with task.ErrInvalidArgument before Start or run on another
// executor than the one Start ran on.
func (c *ChildrenCache) Next() task.Task[Change] { return c.e.next() }

// AwaitNext runs Next on ex, for a blocking face of the caller's own (as
// Client.Next is), and waits until it returns or ctx ends: then it
// returns ctx's error and no difference, and the next Next returns what
// this one would have, also when ctx ended just as the difference was
// handed over (which executor.Await would lose; no other Next is served
// until it has been handed back). A session expiry does not end it: it
// waits on, as the cache follows the next session. ex must be the
// executor Start ran on (else it fails at once with
// task.ErrInvalidArgument, as before Start); someone must be running it.
func (c *ChildrenCache) AwaitNext(ctx context.Context, ex *executor.Executor) (Change, error) {
	return c.e.awaitNext(ctx, ex, "cache "+c.e.dir+": next")
}

// Current returns the cached children, sorted by path. It may be an
// intermediate state between two consistent snapshots; use Next or
// WithOnSynced for consistent ones.
func (c *ChildrenCache) Current() []Node {
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	return curNodes(c.e.cur)
}

// Stop returns a task that stops the cache: its flows end, waiting Nexts
// fail with ErrStopped. It is idempotent.
func (c *ChildrenCache) Stop() task.Task[task.Unit] { return c.e.stop() }

// Done is closed when the cache ends.
func (c *ChildrenCache) Done() <-chan struct{} { return c.e.done }

// Err is nil while the cache runs, then why it ended: ErrStopped after
// Stop, task.ErrClosed once the executor's connection closed, or the
// error no retry settles.
func (c *ChildrenCache) Err() error { return c.e.Err() }

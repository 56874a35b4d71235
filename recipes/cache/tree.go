package cache

import (
	"fmt"

	"github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/task"
)

// TreeCache follows a node and everything under it (each node's Stat,
// and data with WithData) on one executor, across reconnects and
// session expiries, until Stop. It is a ChildrenCache applied at every
// level: every node is read with a data watch and listed with a child
// watch. Start, Next and Stop are tasks run on the executor; Current,
// Done and Err are safe from any goroutine.
//
// Each node costs two watches and two reads at the start and after every
// session expiry: follow subtrees of a size you would list by hand.
type TreeCache struct{ e *engine }

// NewTree returns a cache of the subtree at root; it does nothing until
// Start. An invalid path fails with an error wrapping task.ErrInvalidPath.
// A nil Option fails with task.ErrInvalidArgument.
func NewTree(root string, opts ...Option) (*TreeCache, error) {
	if err := task.ValidatePath(root, false); err != nil {
		return nil, fmt.Errorf("cache: tree root: %w", err)
	}
	o, err := newOptions(opts, true)
	if err != nil {
		return nil, err
	}
	e := newEngine("", root, o)
	e.tree = true
	return &TreeCache{e: e}, nil
}

// Root is the root of the subtree the cache follows.
func (c *TreeCache) Root() string { return c.e.node }

// Start returns a task that starts the cache and succeeds with it once
// the whole subtree has been read (a consistent snapshot). A missing root
// is watched for creation. See ChildrenCache.Start for the rest.
func (c *TreeCache) Start() task.Task[*TreeCache] {
	return combinators.Map(c.e.start(), func(task.Unit) *TreeCache { return c })
}

// Next returns a task that waits until the subtree differs from what the
// previous Next returned and yields the difference, as ChildrenCache.Next
// does (the root included). A node removed takes what was under it: all
// are in Removed.
func (c *TreeCache) Next() task.Task[Change] { return c.e.next() }

// Current returns the cached nodes (the root first, then by path).
func (c *TreeCache) Current() []Node {
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	return curNodes(c.e.cur)
}

// Stop returns a task that stops the cache. It is idempotent.
func (c *TreeCache) Stop() task.Task[task.Unit] { return c.e.stop() }

// Done is closed when the cache ends.
func (c *TreeCache) Done() <-chan struct{} { return c.e.done }

// Err is nil while the cache runs, then why it ended (see
// ChildrenCache.Err).
func (c *TreeCache) Err() error { return c.e.Err() }

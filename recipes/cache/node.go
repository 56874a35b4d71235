package cache

import (
	"fmt"

	"github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/task"
)

// NodeCache follows one node (its data and Stat, and whether it exists)
// on one executor, across reconnects and session expiries, until Stop.
// Start, Next and Stop are tasks run on the executor; Current, Done and
// Err are safe from any goroutine.
type NodeCache struct{ e *engine }

// NewNode returns a cache of the node at path; it does nothing until
// Start. An invalid path fails with an error wrapping task.ErrInvalidPath.
// WithData is implied: a node cache always keeps the data. WithRecursive
// or a nil Option fails with task.ErrInvalidArgument.
func NewNode(path string, opts ...Option) (*NodeCache, error) {
	if err := task.ValidatePath(path, false); err != nil {
		return nil, fmt.Errorf("cache: node: %w", err)
	}
	o, err := newOptions(opts, false)
	if err != nil {
		return nil, err
	}
	o.Data = true
	return &NodeCache{e: newEngine("", path, o)}, nil
}

// Path is the path of the node the cache follows.
func (c *NodeCache) Path() string { return c.e.node }

// Start returns a task that starts the cache and succeeds with it once
// the node has been read (or found missing, and watched for creation).
// See ChildrenCache.Start for the rest: the same rules hold.
func (c *NodeCache) Start() task.Task[*NodeCache] {
	return combinators.Map(c.e.start(), func(task.Unit) *NodeCache { return c })
}

// Next returns a task that waits until the node differs from what the
// previous Next returned (the first Next: from a missing node) and yields
// the difference, one entry at most: Added (created), Removed (deleted),
// Changed (another Stat: new data, or, read again after a session expiry,
// children created or deleted meanwhile) or Recreated (deleted and
// created again since the last read: its czxid differs). Changes coalesce as for ChildrenCache.
func (c *NodeCache) Next() task.Task[Change] { return c.e.next() }

// Current returns the node as last read, and false if it is missing.
func (c *NodeCache) Current() (Node, bool) { return c.e.get(c.e.node) }

// Stop returns a task that stops the cache. It is idempotent.
func (c *NodeCache) Stop() task.Task[task.Unit] { return c.e.stop() }

// Done is closed when the cache ends.
func (c *NodeCache) Done() <-chan struct{} { return c.e.done }

// Err is nil while the cache runs, then why it ended (see
// ChildrenCache.Err).
func (c *NodeCache) Err() error { return c.e.Err() }

package cache

import (
	"fmt"

	"github.com/zkflow/zkflow/task"
)

// options is what the options set; the zero value is a cache of names
// and Stats with no callbacks.
type options struct {
	Data      bool
	OnEvent   func(Event)
	OnSynced  func()
	OnEnd     func(error)
	Recursive bool
}

// Option configures a cache (NewNode, NewChildren, NewTree and their
// clients).
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithData keeps each node's data in the cache. A ChildrenCache or
// TreeCache without it keeps only names and Stats, and still reports
// data changes as Changed, by mzxid; a NodeCache always keeps the data.
func WithData() Option { return optionFunc(func(o *options) { o.Data = true }) }

// WithOnEvent makes fn be called for every change the cache sees, on the
// executor goroutine, in the order the cache saw them, once per change.
// fn must not block. It may see intermediate states; the snapshots of
// Next and WithOnSynced are consistent.
func WithOnEvent(fn func(Event)) Option { return optionFunc(func(o *options) { o.OnEvent = fn }) }

// WithOnSynced makes fn be called on the executor goroutine whenever the
// cache has read every change it was notified of: the cache then holds a
// consistent snapshot (every node as of one instant of the server's
// history). fn must not block.
func WithOnSynced(fn func()) Option { return optionFunc(func(o *options) { o.OnSynced = fn }) }

// WithOnEnd makes fn be called once, on the executor goroutine, when
// the cache ends, with the error Err then returns: ErrStopped after
// Stop, task.ErrClosed once the executor has closed, or the error no
// retry settles (task.ErrNoAuth: an operator's ACL refused a read). It
// is for code on the task face that builds on a cache and must not go
// on after it (a flow cannot wait on Done). fn must not block.
func WithOnEnd(fn func(error)) Option { return optionFunc(func(o *options) { o.OnEnd = fn }) }

// WithRecursive makes a TreeCache follow the subtree with one
// persistent-recursive watch on the root (ZooKeeper 3.6+, as Curator's
// CuratorCache does) and plain reads, instead of a data and a child
// watch on every node: one watch however large the tree, and one read per
// change (two for a node created or deleted: its parent's Stat changed
// too). The guarantees are the same; after a reconnect the cache reads
// the whole subtree again (the server sends no event for what changed
// meanwhile). See recursive.go. NewNode and NewChildren refuse it with
// task.ErrInvalidArgument.
func WithRecursive() Option { return optionFunc(func(o *options) { o.Recursive = true }) }

// newOptions applies opts; a nil Option fails with
// task.ErrInvalidArgument, and so does WithRecursive unless tree.
func newOptions(opts []Option, tree bool) (options, error) {
	var o options
	for _, opt := range opts {
		if opt == nil {
			return options{}, fmt.Errorf("cache: nil option: %w", task.ErrInvalidArgument)
		}
		opt.apply(&o)
	}
	if o.Recursive && !tree {
		return options{}, fmt.Errorf("cache: WithRecursive is for a TreeCache: %w", task.ErrInvalidArgument)
	}
	return o, nil
}

package discovery

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/cache"
	"github.com/zkflow/zkflow/task"
)

// Cache follows the instances of one service (a recipes/cache
// ChildrenCache of the service's directory, with data), across
// reconnects and session expiries, until Stop. Start, Next and Stop are
// tasks run on the executor; Instances, Done and Err are safe from any
// goroutine. Nodes whose data is not an instance are left out.
type Cache struct {
	name string
	cc   *cache.ChildrenCache

	snap atomic.Pointer[[]Instance] // the instances at the latest consistent snapshot

	mu     sync.Mutex
	parsed map[string]parsedNode // by node name: the last parse of each node
	memo   *parseMemo            // the Discovery's, shared with its other caches
}

type parsedNode struct {
	mzxid, czxid int64
	in           Instance
	ok           bool
}

// NewCache returns a cache of service name's instances; it does nothing
// until Start. An invalid name fails with an error wrapping
// task.ErrInvalidPath.
func (d *Discovery) NewCache(name string) (*Cache, error) {
	if d.zero() {
		return nil, errZero("Discovery")
	}
	if err := d.validService(name); err != nil {
		return nil, err
	}
	c := &Cache{name: name, parsed: map[string]parsedNode{}, memo: d.parsed}
	cc, err := cache.NewChildren(d.ServicePath(name), cache.WithData(), cache.WithOnSynced(c.synced))
	if err != nil {
		return nil, err
	}
	c.cc = cc
	return c, nil
}

// Name is the service the cache follows.
func (c *Cache) Name() string {
	if c == nil {
		return ""
	}
	return c.name
}

// zero reports a nil or zero Cache (not made by NewCache): it has ended
// (Done is closed), and its tasks, Provider and Err fail with an error
// wrapping task.ErrInvalidArgument.
func (c *Cache) zero() bool { return c == nil || c.cc == nil }

// Start returns a task that starts the cache and succeeds once the
// service's instances have all been read (see cache.ChildrenCache.Start).
func (c *Cache) Start() task.Task[*Cache] {
	if c.zero() {
		return task.Fail[*Cache](errZero("Cache"))
	}
	return combinators.Map(c.cc.Start(), func(*cache.ChildrenCache) *Cache { return c })
}

// Next returns a task that waits until the service's nodes differ from
// those at the previous Next (the first Next: from none) and yields the
// instances now, sorted by node name, at a consistent snapshot. Changes
// coalesce, as for cache.ChildrenCache.Next; an answer may list the same
// instances as the one before when only a node that is not an instance
// changed. As with Instances, the instances' Payload and URISpec are
// shared with the cache and the Discovery's queries: do not modify them
// (Provider.Get's and Query's are the caller's own).
func (c *Cache) Next() task.Task[[]Instance] {
	if c.zero() {
		return task.Fail[[]Instance](errZero("Cache"))
	}
	return combinators.Map(c.cc.Next(), func(ch cache.Change) []Instance { return c.instances(ch.Nodes) })
}

// awaitNext is Next for ServiceCache.Next (cache.ChildrenCache.AwaitNext).
func (c *Cache) awaitNext(ctx context.Context, ex *executor.Executor) ([]Instance, error) {
	if c.zero() {
		return nil, errZero("Cache")
	}
	ch, err := c.cc.AwaitNext(ctx, ex)
	if err != nil {
		return nil, err
	}
	return c.instances(ch.Nodes), nil
}

// Stop returns a task that stops the cache. It is idempotent.
func (c *Cache) Stop() task.Task[task.Unit] {
	if c.zero() {
		return task.Fail[task.Unit](errZero("Cache"))
	}
	return c.cc.Stop()
}

// Instances returns the instances as of the cache's latest consistent
// snapshot (every instance as of one instant of the server's history),
// sorted by node name; none before Start has succeeded, and the last
// snapshot, no longer followed, once the cache has ended (Err). The
// slice and the instances' Payload and URISpec are shared: do not modify
// them.
func (c *Cache) Instances() []Instance {
	if c == nil {
		return nil
	}
	if p := c.snap.Load(); p != nil {
		return *p
	}
	return nil
}

// Provider returns a provider over the cache's instances (NewProvider
// with Instances), timing the down-instance policy on clock (the
// executor's). Once the cache has ended, its Get fails with an error
// wrapping Err: the instances are no longer followed.
func (c *Cache) Provider(clock task.Clock, opts ...ProviderOption) (*Provider, error) {
	if c.zero() {
		return nil, errZero("Cache")
	}
	p, err := NewProvider(c.Instances, clock, opts...)
	if err != nil {
		return nil, err
	}
	p.ended = c.Err
	return p, nil
}

// synced is the ChildrenCache's OnSynced: it publishes the snapshot.
// Executor goroutine.
func (c *Cache) synced() {
	ins := c.instances(c.cc.Current())
	c.snap.Store(&ins)
}

// Done is closed when the cache ends.
func (c *Cache) Done() <-chan struct{} {
	if c.zero() {
		return closed
	}
	return c.cc.Done()
}

// Err is nil while the cache runs, then why it ended (cache.ErrStopped
// after Stop).
func (c *Cache) Err() error {
	if c.zero() {
		return errZero("Cache")
	}
	return c.cc.Err()
}

// instances parses nodes, reusing the parse of a node that did not change
// since (same czxid and mzxid).
func (c *Cache) instances(nodes []cache.Node) []Instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Instance, 0, len(nodes))
	for _, n := range nodes {
		name := n.Name()
		p, ok := c.parsed[name]
		if !ok || p.mzxid != n.Stat.Mzxid || p.czxid != n.Stat.Czxid {
			in, ok := c.memo.parse(n.Data)
			p = parsedNode{mzxid: n.Stat.Mzxid, czxid: n.Stat.Czxid, in: in, ok: ok}
			c.parsed[name] = p
		}
		if p.ok {
			out = append(out, p.in)
		}
	}
	// parsed now holds every node's name (one each: the children of one
	// directory): more names are nodes gone since, to forget.
	if len(c.parsed) > len(nodes) {
		seen := make(map[string]bool, len(nodes))
		for _, n := range nodes {
			seen[n.Name()] = true
		}
		for name := range c.parsed {
			if !seen[name] {
				delete(c.parsed, name)
			}
		}
	}
	return out
}

// parseMemo keeps the parses of instance data by the data itself, so that
// the caches and queries of one Discovery parse each registration once
// between them (a process often follows one service from several places,
// or starts a cache or queries again and again). The caches' instances
// share Payload and URISpec (Cache.Instances says so); a query copies
// them (Instance.own). It holds at most memoBytes of data: past that it
// starts over.
type parseMemo struct {
	mu    sync.Mutex
	m     map[string]parsedData
	bytes int
}

type parsedData struct {
	in Instance
	ok bool
}

const memoBytes = 1 << 20

// parse returns ParseInstance's result for data: ok false if data is not
// an instance. A nil memo parses every time.
func (p *parseMemo) parse(data []byte) (Instance, bool) {
	if p == nil {
		in, err := ParseInstance(data)
		return in, err == nil
	}
	p.mu.Lock()
	r, found := p.m[string(data)]
	p.mu.Unlock()
	if found {
		return r.in, r.ok
	}
	in, err := ParseInstance(data)
	r = parsedData{in, err == nil}
	if len(data) <= memoBytes/16 {
		p.mu.Lock()
		if p.m == nil || p.bytes+len(data) > memoBytes {
			p.m, p.bytes = map[string]parsedData{}, 0
		}
		p.m[string(data)] = r
		p.bytes += len(data)
		p.mu.Unlock()
	}
	return r.in, r.ok
}

package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/cache"
	"github.com/zkflow/zkflow/task"
)

// Known bugs of the configuration readers, switched on by tests only
// (internal/canary).
const (
	// bugIgnoreMarker: a reader delivers while the invalid marker exists,
	// so it can see an update made one write at a time half applied.
	bugIgnoreMarker canary.Name = "config/ignore-invalid-marker"
	// bugDeliverEvents: a reader delivers on every change it reads, not at
	// consistent snapshots, so it can see a multi-node update half applied
	// (some nodes read after the multi, others before).
	bugDeliverEvents canary.Name = "config/deliver-intermediate"
	// bugReloadNoCancel: the Reloader starts the run for a new version
	// without canceling the previous run, so both run at once.
	bugReloadNoCancel canary.Name = "config/reload-no-cancel"
	// bugReloadOverlapsCleanup: the Reloader starts the next run once the
	// previous run's task has ended, while the cleanups it registered with
	// Scope.Defer still run: they undo its work under the new run.
	bugReloadOverlapsCleanup canary.Name = "config/reload-overlaps-cleanup"
	// bugReloadDoneEarly: a Reloader's Done closes as soon as its
	// watcher has ended, while the run going then and its cleanups still
	// run: a Reloader started again when Done closes runs beside it.
	bugReloadDoneEarly canary.Name = "config/reload-done-early"
	// bugRedeliver: a watcher delivers every consistent snapshot it reads,
	// also the one it delivered last (after a reconnect's or an expiry's
	// re-read, say): the handler sees the same version twice, and a
	// Reloader restarts its component for nothing.
	bugRedeliver canary.Name = "config/redeliver"
)

// MarkerName is the name of the invalid marker under a configuration
// directory: while <root>/invalid exists, readers of the directory wait.
const MarkerName = "invalid"

// ErrStopped is a Watcher's (and a Reloader's) Err after Stop.
var ErrStopped = errors.New("config: stopped")

// Snapshot is a configuration as of one instant of the server's history:
// for a node (Watch), the node's data; for a directory (WatchDir), its
// children's data by name (the invalid marker left out).
type Snapshot struct {
	// Path is the node or directory watched.
	Path string
	// Exists says whether the node exists (Watch), or whether the
	// directory has any child (WatchDir).
	Exists bool
	// Data is the node's data (Watch only).
	Data []byte
	// Values are the children's data by name (WatchDir only).
	Values map[string][]byte
	// Stats are the Stats as read: the node's under "" (Watch), each
	// child's under its name (WatchDir).
	Stats map[string]task.Stat
}

// Version identifies a snapshot: the highest mzxid among its nodes (the
// zxid of the last change to a node it holds), and 0 for an empty one. It
// is no order: a reader delivers its snapshots in the order of the
// changes, but a deletion can lower Version (the node it removed takes its
// mzxid with it).
func (s Snapshot) Version() int64 {
	var v int64
	for _, st := range s.Stats {
		v = max(v, st.Mzxid, st.Czxid)
	}
	return v
}

// same reports whether a and b hold the same nodes (by Stat).
func same(a, b Snapshot) bool {
	return a.Exists == b.Exists && maps.Equal(a.Stats, b.Stats)
}

// DirOptions configure WatchDir.
type DirOptions struct {
	// Marker makes the reader honour the invalid-marker protocol: no
	// snapshot is delivered while <root>/invalid exists.
	Marker bool
	// Subtree follows every node under root (a TreeCache), not only its
	// children: Values are keyed by the path relative to root ("db",
	// "db/host"); a node with children has an entry too (its own data).
	// With Marker, a node named invalid at any level (UpdateMarked on any
	// directory of the subtree) holds back delivery.
	Subtree bool
	// Recursive, with Subtree, follows the subtree with one
	// persistent-recursive watch on root (cache.WithRecursive,
	// ZooKeeper 3.6+): one watch and one read per change instead of two
	// per node, at the price of a listing of every node after each
	// reconnect. On ZooKeeper 3.8 no other one-time watch may be set on
	// root by the same session (task.AddWatch). Without Subtree it is
	// refused with task.ErrInvalidArgument.
	Recursive bool
}

// Watcher delivers a configuration to a handler on the executor. Done,
// Err and Latest are safe from any goroutine.
type Watcher struct {
	path    string
	dir     bool
	opts    DirOptions
	handler func(Snapshot)

	nc *cache.NodeCache
	cc *cache.ChildrenCache
	tc *cache.TreeCache

	mu     sync.Mutex
	latest Snapshot
	has    bool

	// executor only
	onSnapshot func()      // after every consistent snapshot, delivered or not
	onEnd      func(error) // once, when the watcher ends (its cache's WithOnEnd)
}

// Watch returns a task that follows the node at path and calls handler
// with its configuration, on the executor goroutine, in order: first with
// the configuration at the start (Exists false if the node is missing),
// then with each new version. It re-reads the node after every
// notification and on every new session, so the last state is always
// delivered, including a change made while the client was disconnected
// or its session expired (delivered after the reconnect). Versions may be
// skipped (only the latest is delivered), never delivered out of order.
// handler must not block. The task succeeds with the Watcher once the
// first consistent snapshot has been read (and delivered, unless marked
// invalid: see WatchDir); the Watcher runs until Stop. Each run of the
// task starts a Watcher of its own (run again after an expiry, say).
func Watch(path string, handler func(Snapshot)) task.Task[*Watcher] {
	if handler == nil {
		return task.Fail[*Watcher](fmt.Errorf("config: nil handler: %w", task.ErrInvalidArgument))
	}
	return eachRun(func() (*Watcher, task.Task[task.Unit], error) {
		w := &Watcher{path: path, handler: handler}
		nc, err := cache.NewNode(path, cache.WithOnSynced(w.synced), cache.WithOnEvent(w.event), cache.WithOnEnd(w.ended))
		if err != nil {
			return nil, nil, fmt.Errorf("config: %w", err)
		}
		w.nc = nc
		return w, combinators.Map(nc.Start(), func(*cache.NodeCache) task.Unit { return task.Unit{} }), nil
	})
}

// WatchDir returns a task that follows the children of root (one level:
// each child is one configuration entry; with opts.Subtree, every node
// under root) and calls handler with a
// snapshot of all of them, on the executor goroutine. Snapshots are
// consistent: every entry as of one instant, so an update made in one
// multi (Update) is seen entirely or not at all. With opts.Marker, no
// snapshot is delivered while root/invalid exists (see UpdateMarked). The
// rest is as for Watch.
func WatchDir(root string, opts DirOptions, handler func(Snapshot)) task.Task[*Watcher] {
	if handler == nil {
		return task.Fail[*Watcher](fmt.Errorf("config: nil handler: %w", task.ErrInvalidArgument))
	}
	return eachRun(func() (*Watcher, task.Task[task.Unit], error) { return newDirWatcher(root, opts, handler) })
}

// newDirWatcher makes a directory's Watcher and the task that starts it.
func newDirWatcher(root string, opts DirOptions, handler func(Snapshot)) (*Watcher, task.Task[task.Unit], error) {
	w := &Watcher{path: root, dir: true, opts: opts, handler: handler}
	copts := []cache.Option{cache.WithData(), cache.WithOnSynced(w.synced), cache.WithOnEvent(w.event), cache.WithOnEnd(w.ended)}
	if opts.Recursive {
		copts = append(copts, cache.WithRecursive())
	}
	if opts.Recursive && !opts.Subtree {
		return nil, nil, fmt.Errorf("config: DirOptions.Recursive needs Subtree: %w", task.ErrInvalidArgument)
	}
	if opts.Subtree {
		tc, err := cache.NewTree(root, copts...)
		if err != nil {
			return nil, nil, fmt.Errorf("config: %w", err)
		}
		w.tc = tc
		return w, combinators.Map(tc.Start(), func(*cache.TreeCache) task.Unit { return task.Unit{} }), nil
	}
	cc, err := cache.NewChildren(root, copts...)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	w.cc = cc
	return w, combinators.Map(cc.Start(), func(*cache.ChildrenCache) task.Unit { return task.Unit{} }), nil
}

// eachRun returns a task that makes a new Watcher with mk on each run and
// starts it: a task runs twice, it does the work twice (task.Task), so
// two runs, or a run again after an expiry, follow the configuration
// with a watcher each rather than start one cache twice. A watcher mk
// refuses (bad input) fails the task before it runs.
func eachRun(mk func() (*Watcher, task.Task[task.Unit], error)) task.Task[*Watcher] {
	if _, _, err := mk(); err != nil {
		return task.Fail[*Watcher](err)
	}
	return func(s *task.Scope, k task.Cont[*Watcher]) {
		w, start, err := mk()
		if err != nil {
			k(nil, err)
			return
		}
		task.Run(s, start, func(_ task.Unit, err error) {
			if err != nil {
				k(nil, err)
				return
			}
			k(w, nil)
		})
	}
}

// ended is the cache's OnEnd.
func (w *Watcher) ended(error) {
	if w.onEnd != nil {
		w.onEnd(w.Err())
	}
}

// event is the cache's OnEvent: under the canary, delivery on every
// change read.
func (w *Watcher) event(cache.Event) {
	if _, ok := w.Latest(); ok && canary.On(bugDeliverEvents) {
		w.synced()
	}
}

// synced is the cache's OnSynced: deliver the snapshot if it is new and
// not marked invalid.
func (w *Watcher) synced() {
	if w.Err() != nil {
		return
	}
	snap, marked := w.snapshot()
	if !marked || canary.On(bugIgnoreMarker) {
		w.deliver(snap)
	}
	if w.onSnapshot != nil {
		w.onSnapshot()
	}
}

// deliver hands snap to the handler unless it was the last delivered.
func (w *Watcher) deliver(snap Snapshot) {
	w.mu.Lock()
	if w.has && same(w.latest, snap) && !canary.On(bugRedeliver) {
		w.mu.Unlock()
		return
	}
	w.latest, w.has = snap, true
	w.mu.Unlock()
	w.handler(snap)
}

// snapshot builds the current snapshot from the cache, and says whether
// the directory is marked invalid (only with DirOptions.Marker). The
// marker is never one of the Values: its name is no entry's.
func (w *Watcher) snapshot() (Snapshot, bool) {
	snap := Snapshot{Path: w.path, Stats: map[string]task.Stat{}}
	if !w.dir {
		if n, ok := w.nc.Current(); ok {
			snap.Exists, snap.Data, snap.Stats[""] = true, n.Data, n.Stat
		}
		return snap, false
	}
	marked := false
	snap.Values = map[string][]byte{}
	var nodes []cache.Node
	if w.tc != nil {
		nodes = w.tc.Current()
	} else {
		nodes = w.cc.Current()
	}
	for _, n := range nodes {
		name, ok := strings.CutPrefix(n.Path, w.path+"/")
		if w.path == "/" {
			name, ok = strings.CutPrefix(n.Path, "/")
		}
		if !ok || name == "" {
			continue // the root itself
		}
		if name == MarkerName || w.tc != nil && strings.HasSuffix(name, "/"+MarkerName) {
			marked = true
			continue
		}
		snap.Values[name], snap.Stats[name] = n.Data, n.Stat
	}
	snap.Exists = len(snap.Values) > 0 || marked
	return snap, marked && w.opts.Marker
}

// Latest returns the configuration last delivered, and false before the
// first delivery.
func (w *Watcher) Latest() (Snapshot, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.latest, w.has
}

// Stop returns a task that stops the watcher (no more deliveries). It is
// idempotent.
func (w *Watcher) Stop() task.Task[task.Unit] {
	switch {
	case w.nc != nil:
		return w.nc.Stop()
	case w.tc != nil:
		return w.tc.Stop()
	}
	return w.cc.Stop()
}

// Done is closed when the watcher ends.
func (w *Watcher) Done() <-chan struct{} {
	switch {
	case w.nc != nil:
		return w.nc.Done()
	case w.tc != nil:
		return w.tc.Done()
	}
	return w.cc.Done()
}

// Err is nil while the watcher runs, then why it ended: ErrStopped after
// Stop, task.ErrClosed once the executor's connection closed, or the
// error no retry settles.
func (w *Watcher) Err() error {
	var err error
	switch {
	case w.nc != nil:
		err = w.nc.Err()
	case w.tc != nil:
		err = w.tc.Err()
	default:
		err = w.cc.Err()
	}
	if errors.Is(err, cache.ErrStopped) {
		return ErrStopped
	}
	return err
}

// names returns the sorted names of a snapshot's values.
func (s Snapshot) names() []string {
	return slices.Sorted(maps.Keys(s.Values))
}

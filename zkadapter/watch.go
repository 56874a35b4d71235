package zkadapter

import (
	"github.com/go-zookeeper/zk"
	"github.com/zkflow/zkflow/task"
)

// watchKind is go-zookeeper's watchType: which list of the server's
// SetWatches a watch belongs to, and which events trigger it.
type watchKind int

const (
	watchNone  watchKind = -1
	watchData  watchKind = 0 // getData, or exists on an existing node
	watchExist watchKind = 1 // exists on a missing node
	watchChild watchKind = 2 // getChildren
)

type watchKey struct {
	path string
	kind watchKind
}

// watchEntry is one watch of one request; its callback runs once.
type watchEntry struct {
	path string // as the Conn's user sees it (without Config.Root)
	fn   func(task.Event)
}

// addWatch registers a watch set by a reply. It runs on go-zookeeper's
// receive goroutine, in reply order, before any notification that follows
// the reply. c.mu must be held.
func (c *Conn) addWatch(key watchKey, fn func(task.Event)) {
	c.watches[key] = append(c.watches[key], &watchEntry{path: strip(c.cfg.Root, key.path), fn: fn})
}

// triggered lists the watch kinds a node event fires, as ZooKeeper's
// client does (ZKWatchManager.materialize).
func triggered(t zk.EventType) []watchKind {
	switch t {
	case zk.EventNodeCreated:
		return []watchKind{watchExist}
	case zk.EventNodeDataChanged:
		return []watchKind{watchData, watchExist}
	case zk.EventNodeChildrenChanged:
		return []watchKind{watchChild}
	case zk.EventNodeDeleted:
		return []watchKind{watchData, watchExist, watchChild}
	}
	return nil
}

// notify fires the watches a node event triggers. It runs on go-zookeeper's
// receive goroutine, in the order notifications arrive. c.mu must be held.
func (c *Conn) notify(ev zk.Event) {
	for _, kind := range triggered(ev.Type) {
		key := watchKey{ev.Path, kind}
		for _, w := range c.watches[key] {
			c.fire(w, task.Event{Type: task.EventType(ev.Type), State: task.StateConnected, Path: w.path})
		}
		delete(c.watches, key)
	}
	c.notifyPersistent(task.EventType(ev.Type), ev.Path)
}

// endWatches ends every watch with EventNotWatching in state st. c.mu
// must be held.
func (c *Conn) endWatches(st task.State) {
	for key, ws := range c.watches {
		for _, w := range ws {
			c.fire(w, task.Event{Type: task.EventNotWatching, State: st, Path: w.path})
		}
		delete(c.watches, key)
	}
	c.endPersistent(st)
}

// fire makes w's one call. c.mu must be held.
func (c *Conn) fire(w *watchEntry, ev task.Event) {
	w.fn(ev)
}

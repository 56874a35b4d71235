package zkadapter

import (
	"slices"
	"strings"

	"github.com/zkflow/zkflow/task"
)

// Persistent watches (addWatch) and removeWatches, which go-zookeeper
// v1.0.4 lacks: the Conn sends them through its own request path (wire.go)
// and keeps the watches itself, as it keeps the one-time ones (watch.go).
// The server sends their notifications as it sends every notification
// (xid -1); go-zookeeper's receive loop hands each to the event callback,
// in wire order, and notify fires every watch the Conn holds that the
// notification concerns, as ZooKeeper's client does
// (ZKWatchManager.materialize): one-time watches of the kinds the type
// triggers, persistent watches on the path, recursive ones on the path and
// its ancestors unless the type is NodeChildrenChanged. After a reconnect
// the prelude sets them again with SetWatches2; a 3.8 server sends no
// event then for what changed meanwhile.

// ZooKeeper opcodes of persistent watches.
const (
	opRemoveWatches = 18
	opSetWatches2   = 105
	opAddWatch      = 106
)

// addWatchRequest is ZooKeeper's AddWatchRequest.
type addWatchRequest struct {
	Path string
	Mode int32
}

// removeWatchesRequest is ZooKeeper's RemoveWatchesRequest.
type removeWatchesRequest struct {
	Path string
	Type int32
}

// setWatches2Request is ZooKeeper's SetWatches2: SetWatches with the
// persistent and recursive watches to set again (no event for them).
type setWatches2Request struct {
	RelativeZxid               int64
	DataWatches                []string
	ExistWatches               []string
	ChildWatches               []string
	PersistentWatches          []string
	PersistentRecursiveWatches []string
}

// pwatchEntry is one persistent watch the Conn holds.
type pwatchEntry struct {
	path      string // on the server (with Config.Root)
	user      string // as the Conn's user sees it
	recursive bool
	fn        func(task.Event)
}

func addWatchOp(r *task.AddWatchRequest) wireOp {
	return wireOp{code: opAddWatch, req: &addWatchRequest{r.Path, int32(r.Mode)}, res: &emptyResponse{}, reply: errReply}
}

func removeWatchesOp(r *task.RemoveWatchesRequest) wireOp {
	return wireOp{code: opRemoveWatches, req: &removeWatchesRequest{r.Path, int32(r.Type)}, res: &emptyResponse{}, reply: errReply}
}

// addPersistent registers the watch of an addWatch reply. c.mu must be held.
func (c *Conn) addPersistent(r *task.AddWatchRequest, fn func(task.Event)) {
	c.pwatches = append(c.pwatches, &pwatchEntry{
		path: r.Path, user: strip(c.cfg.Root, r.Path), recursive: r.Mode == task.WatchPersistentRecursive, fn: fn,
	})
}

// notifyPersistent hands a node event on path (the server's) to the
// persistent watches it concerns. c.mu must be held.
func (c *Conn) notifyPersistent(typ task.EventType, path string) {
	if len(c.pwatches) == 0 {
		return
	}
	ev := task.Event{Type: typ, State: task.StateConnected, Path: strip(c.cfg.Root, path)}
	for _, w := range c.pwatches {
		if w.recursive && typ == task.EventNodeChildrenChanged {
			continue
		}
		if w.path == path || (w.recursive && under(w.path, path)) {
			w.fn(ev)
		}
	}
}

// under reports whether p is a proper descendant of a.
func under(a, p string) bool {
	if a == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, a) && len(p) > len(a) && p[len(a)] == '/'
}

// removed ends the watches a removeWatches of typ on path (the server's)
// takes from the client, with EventWatchRemoved: Children the one-time
// child watches, Data the one-time data and exist watches, Any those and
// the persistent ones. c.mu must be held.
func (c *Conn) removed(path string, typ task.WatcherType) {
	var kinds []watchKind
	switch typ {
	case task.WatcherChildren:
		kinds = []watchKind{watchChild}
	case task.WatcherData:
		kinds = []watchKind{watchData, watchExist}
	default:
		kinds = []watchKind{watchData, watchExist, watchChild}
	}
	for _, k := range kinds {
		key := watchKey{path, k}
		for _, w := range c.watches[key] {
			c.fire(w, task.Event{Type: task.EventWatchRemoved, State: task.StateConnected, Path: w.path})
		}
		delete(c.watches, key)
	}
	if typ != task.WatcherAny {
		return
	}
	c.pwatches = slices.DeleteFunc(c.pwatches, func(w *pwatchEntry) bool {
		if w.path != path {
			return false
		}
		w.fn(task.Event{Type: task.EventWatchRemoved, State: task.StateConnected, Path: w.user})
		return true
	})
}

// persistentState tells the persistent watches of a transition of their
// session (StateSuspended, or StateConnected again). c.mu must be held.
func (c *Conn) persistentState(ev task.Event) {
	for _, w := range c.pwatches {
		w.fn(ev)
	}
}

// endPersistent ends the persistent watches with EventNotWatching in
// state st. c.mu must be held.
func (c *Conn) endPersistent(st task.State) {
	for _, w := range c.pwatches {
		w.fn(task.Event{Type: task.EventNotWatching, State: st, Path: w.user})
	}
	c.pwatches = nil
}

// persistentPaths returns the paths of the persistent and of the
// recursive watches, sorted, each once.
func persistentPaths(ws []*pwatchEntry) (persistent, recursive []string) {
	for _, w := range ws {
		if w.recursive {
			recursive = append(recursive, w.path)
		} else {
			persistent = append(persistent, w.path)
		}
	}
	slices.Sort(persistent)
	slices.Sort(recursive)
	return slices.Compact(persistent), slices.Compact(recursive)
}

// setWatches2 returns the SetWatches2 requests that set the persistent
// watches ws again, split as setWatches splits (the one-time watches go in
// SetWatches requests before them: the server then leaves a persistent
// watch persistent where a one-time watch shares its path, as after
// SetWatches2's own order).
func setWatches2(ws []*pwatchEntry, zxid int64, limit int) []*setWatches2Request {
	persistent, recursive := persistentPaths(ws)
	var reqs []*setWatches2Request
	var cur *setWatches2Request
	size := 0
	add := func(p string, rec bool) {
		n := 4 + len(p)
		if cur == nil || size+n > limit {
			cur = &setWatches2Request{RelativeZxid: zxid, DataWatches: []string{}, ExistWatches: []string{}, ChildWatches: []string{},
				PersistentWatches: []string{}, PersistentRecursiveWatches: []string{}}
			reqs = append(reqs, cur)
			size = setWatches2Header
		}
		size += n
		if rec {
			cur.PersistentRecursiveWatches = append(cur.PersistentRecursiveWatches, p)
		} else {
			cur.PersistentWatches = append(cur.PersistentWatches, p)
		}
	}
	for _, p := range persistent {
		add(p, false)
	}
	for _, p := range recursive {
		add(p, true)
	}
	return reqs
}

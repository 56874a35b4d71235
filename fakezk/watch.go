package fakezk

import "github.com/zkflow/zkflow/task"

type watchKind uint8

const (
	kindData  watchKind = iota // getData, or exists on an existing node
	kindExist                  // exists on a missing node
	kindChild                  // getChildren
)

// watch is one request's watch callback. ZooKeeper's server keeps one watch
// per (connection, path) and the client fans the notification out to every
// watcher it registered; keeping one entry per request here gives the same
// observable result.
type watch struct {
	sess *session
	path string
	kind watchKind
	cb   func(task.Event)
	done bool
}

func (s *Server) addWatch(sess *session, path string, kind watchKind, cb func(task.Event)) {
	w := &watch{sess: sess, path: path, kind: kind, cb: cb}
	sess.watches = append(sess.watches, w)
	if kind == kindChild {
		s.childW[path] = append(s.childW[path], w)
	} else {
		s.dataW[path] = append(s.dataW[path], w)
	}
}

// trigger fires the watches an event on path reaches (DataTree's
// triggerWatch): created and data-changed reach exists/getData watches,
// deleted reaches those and getChildren watches, children-changed reaches
// getChildren watches. Watches of a session whose connection is down stay
// registered; reconnect re-checks them as SetWatches does.
func (s *Server) trigger(path string, typ task.EventType) {
	switch typ {
	case task.EventNodeCreated, task.EventNodeDataChanged:
		s.fireTable(s.dataW, path, typ)
	case task.EventNodeDeleted:
		s.fireTable(s.dataW, path, typ)
		s.fireTable(s.childW, path, typ)
	case task.EventNodeChildrenChanged:
		s.fireTable(s.childW, path, typ)
	}
}

func (s *Server) fireTable(table map[string][]*watch, path string, typ task.EventType) {
	ws := table[path]
	if len(ws) == 0 {
		return
	}
	var keep []*watch
	for _, w := range ws {
		c := w.sess.conn
		if c == nil || !c.connected || c.sess != w.sess {
			keep = append(keep, w)
			continue
		}
		s.fireWatch(w, task.Event{Type: typ, State: task.StateConnected, Path: path})
	}
	if len(keep) == 0 {
		delete(table, path)
	} else {
		table[path] = keep
	}
}

func (s *Server) fireWatch(w *watch, ev task.Event) {
	if w.done {
		return
	}
	w.done = true
	s.enqueue(w.sess.conn, item{kind: itemWatch, fn: w.cb, ev: ev})
}

func removeWatch(table map[string][]*watch, w *watch) {
	ws := table[w.path]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(table, w.path)
	} else {
		table[w.path] = ws
	}
}

// unregisterWatches takes a dead session's watches out of the tables; they
// stay in sess.watches until the client learns of the end (notWatching).
func (s *Server) unregisterWatches(sess *session) {
	for _, w := range sess.watches {
		if w.done {
			continue
		}
		if w.kind == kindChild {
			removeWatch(s.childW, w)
		} else {
			removeWatch(s.dataW, w)
		}
	}
}

// notWatching completes every unfired watch of sess with EventNotWatching.
func (s *Server) notWatching(c *Conn, sess *session, state task.State) {
	for _, w := range sess.watches {
		if !w.done {
			w.done = true
			s.enqueue(c, item{kind: itemWatch, fn: w.cb, ev: task.Event{Type: task.EventNotWatching, State: state, Path: w.path}})
		}
	}
	sess.watches = nil
}

// setWatches re-checks a reconnected session's watches against the zxid the
// client last saw, as DataTree.setWatches does: a data watch fires
// NodeDeleted or NodeDataChanged if that happened meanwhile, an exist watch
// NodeCreated, a child watch NodeDeleted or NodeChildrenChanged.
func (s *Server) setWatches(c *Conn, sess *session) {
	live := sess.watches[:0]
	for _, w := range sess.watches {
		if w.done {
			continue
		}
		n := s.tree.nodes[w.path]
		var typ task.EventType
		switch w.kind {
		case kindData:
			if n == nil {
				typ = task.EventNodeDeleted
			} else if n.stat.Mzxid > c.lastZxid {
				typ = task.EventNodeDataChanged
			}
		case kindExist:
			if n != nil {
				typ = task.EventNodeCreated
			}
		case kindChild:
			if n == nil {
				typ = task.EventNodeDeleted
			} else if n.stat.Pzxid > c.lastZxid {
				typ = task.EventNodeChildrenChanged
			}
		}
		if typ == 0 {
			live = append(live, w)
			continue
		}
		if w.kind == kindChild {
			removeWatch(s.childW, w)
		} else {
			removeWatch(s.dataW, w)
		}
		s.fireWatch(w, task.Event{Type: typ, State: task.StateConnected, Path: w.path})
	}
	sess.watches = live
}

// compactWatches drops fired watches from the session's list now and then.
// The threshold doubles with the live count, so the cost is amortised.
func compactWatches(sess *session) {
	if len(sess.watches) < max(64, sess.compactAt) {
		return
	}
	live := sess.watches[:0]
	for _, w := range sess.watches {
		if !w.done {
			live = append(live, w)
		}
	}
	clear(sess.watches[len(live):])
	sess.watches = live
	sess.compactAt = 2 * len(live)
}

package fakezk

import (
	"slices"

	"github.com/zkflow/zkflow/task"
)

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
	// withheld: the server dropped it, unfired, because its session
	// could not READ the node an event was about (see fireTable); the
	// client still holds it.
	withheld bool
	// muted: a child watch whose session's child-list registration on
	// the path a later recursive addWatch of the session made recursive
	// (pwatch.go, registerPersistent): the server sends it no
	// NodeChildrenChanged, only NodeDeleted.
	muted bool
}

func (s *Server) addWatch(sess *session, path string, kind watchKind, cb func(task.Event)) {
	w := s.spareWatches.New(watchChunk)
	*w = watch{sess: sess, path: path, kind: kind, cb: cb}
	sess.watches = append(sess.watches, w)
	s.register(w)
}

// watchChunk is how many watches the server allocates at once: one
// object per chunk rather than per watch (a chunk lives while one of its
// watches is referred to; none is ever used twice).
const watchChunk = 32

// register puts w in the server's watch table for its kind. A path's
// first watch takes a list a path's last watch gave back (spareLists).
func (s *Server) register(w *watch) {
	table := s.dataW
	if w.kind == kindChild {
		table = s.childW
	}
	ws, ok := table[w.path]
	if !ok {
		ws = s.takeList()
	}
	table[w.path] = append(ws, w)
}

// maxSpareLists bounds the watch lists the server keeps for reuse.
const maxSpareLists = 64

// takeList returns an empty watch list to reuse, nil if none is spare.
func (s *Server) takeList() []*watch {
	n := len(s.spareLists)
	if n == 0 {
		return nil
	}
	ws := s.spareLists[n-1]
	s.spareLists[n-1] = nil
	s.spareLists = s.spareLists[:n-1]
	return ws
}

// giveList takes back the list of a path that has no watch left (out of
// its table: nothing else refers to it), cleared, for takeList.
func (s *Server) giveList(ws []*watch) {
	if cap(ws) == 0 || len(s.spareLists) >= maxSpareLists {
		return
	}
	clear(ws[:cap(ws)])
	s.spareLists = append(s.spareLists, ws[:0])
}

// unregister takes w out of the server's watch table.
func (s *Server) unregister(w *watch) {
	if w.kind == kindChild {
		s.removeWatch(s.childW, w)
	} else {
		s.removeWatch(s.dataW, w)
	}
}

// trigger fires the watches an event on path reaches (DataTree's
// triggerWatch): created and data-changed reach exists/getData watches,
// deleted reaches those and getChildren watches, children-changed reaches
// getChildren watches. acl is the ACL of the node the event is about (the
// parent's for children-changed). Watches of a session whose connection
// is down stay registered; reconnect re-checks them as SetWatches does.
func (s *Server) trigger(path string, typ task.EventType, acl []task.ACL) {
	s.trig++
	// got collects the sessions notified (persistent watches only).
	var got []*session
	var gp *[]*session
	if s.pwatchN > 0 {
		gp = &got
	}
	switch typ {
	case task.EventNodeCreated, task.EventNodeDataChanged:
		s.fireTable(s.dataW, path, typ, acl, gp)
	case task.EventNodeDeleted:
		s.fireTable(s.dataW, path, typ, acl, gp)
		s.fireTable(s.childW, path, typ, acl, gp)
	case task.EventNodeChildrenChanged:
		s.fireTable(s.childW, path, typ, acl, gp)
	}
	if gp == nil {
		return
	}
	// One notification per session (pwatch.go): the persistent watches
	// its client holds take it, whichever registration caused it.
	oneShot := len(got)
	got = s.persistentNotified(path, typ, acl, got)
	for i, sess := range got {
		s.materialize(sess, path, typ, i < oneShot)
	}
}

// fireTable fires table's watches on path. A watch whose session may not
// READ acl is dropped without a notification, as ZooKeeper's ServerCnxn
// does since the fix of CVE-2024-23944 (3.8.4, and Debian's 3.8.0): the
// server forgets it, the client keeps waiting on it (withheld).
func (s *Server) fireTable(table map[string][]*watch, path string, typ task.EventType, acl []task.ACL, got *[]*session) {
	ws := table[path]
	if len(ws) == 0 {
		return
	}
	// The watches kept (their session's connection is down) are moved
	// to the front of ws: nothing but the table refers to it, and
	// notifying enqueues deliveries without touching the tables.
	keep := ws[:0]
	for _, w := range ws {
		if w.done { // fired while registered (fireDeferred): dropped now
			continue
		}
		if w.muted && typ == task.EventNodeChildrenChanged {
			keep = append(keep, w)
			continue
		}
		c := w.sess.conn
		if c == nil || !c.connected || c.sess != w.sess {
			keep = append(keep, w)
			continue
		}
		if !allowed(acl, task.PermRead, c.who) {
			if !w.done && !w.withheld {
				w.withheld = true
				w.sess.withheld++
				s.tracef("c%d watch %s %s withheld: no READ", c.num, typ, path)
			}
			continue
		}
		s.notify(w, task.Event{Type: typ, State: task.StateConnected, Path: path})
		if got != nil && !slices.Contains(*got, w.sess) {
			*got = append(*got, w.sess)
		}
	}
	if len(keep) == 0 {
		delete(table, path)
		s.giveList(ws)
	} else {
		clear(ws[len(keep):])
		table[path] = keep
	}
}

// clientKinds lists the watches a client fires for a notification of typ
// on a path (ZKWatchManager.materialize, zkadapter's triggered).
func clientKinds(typ task.EventType) []watchKind {
	switch typ {
	case task.EventNodeCreated:
		return []watchKind{kindExist}
	case task.EventNodeDataChanged:
		return []watchKind{kindData, kindExist}
	case task.EventNodeChildrenChanged:
		return []watchKind{kindChild}
	case task.EventNodeDeleted:
		return []watchKind{kindData, kindExist, kindChild}
	}
	return nil
}

// notify delivers the server's notification ev to w's session through w.
// The client fires every watch it holds that the notification triggers:
// the server's watches are one per request here, so that is w alone,
// except for withheld watches, which only the client holds: those on the
// same path of a kind ev triggers fire with it.
func (s *Server) notify(w *watch, ev task.Event) {
	s.fireWatch(w, ev)
	sess := w.sess
	if sess.withheld == 0 {
		return
	}
	for _, x := range sess.watches {
		if x.withheld && !x.done && x.path == ev.Path && slices.Contains(clientKinds(ev.Type), x.kind) {
			s.fireWatch(x, ev)
		}
	}
}

func (s *Server) fireWatch(w *watch, ev task.Event) {
	if w.done {
		return
	}
	w.done = true
	if w.withheld {
		w.withheld = false
		w.sess.withheld--
	}
	s.enqueue(w.sess.conn, item{kind: itemWatch, fn: w.cb, ev: ev})
}

// removeWatch takes w out of table, in place: nothing but the table
// refers to a path's list.
func (s *Server) removeWatch(table map[string][]*watch, w *watch) {
	ws := table[w.path]
	if i := slices.Index(ws, w); i >= 0 {
		ws = slices.Delete(ws, i, i+1)
	}
	if len(ws) == 0 {
		delete(table, w.path)
		s.giveList(ws)
	} else {
		table[w.path] = ws
	}
}

// unregisterWatches takes a dead session's watches out of the tables; they
// stay in sess.watches until the client learns of the end (notWatching).
func (s *Server) unregisterWatches(sess *session) {
	s.unregisterPersistent(sess)
	for _, w := range sess.watches {
		// A fired watch is out of its table, except one fireDeferred
		// fired (left there for fireTable to drop): it goes now too.
		if !w.withheld {
			s.unregister(w)
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
	sess.withheld = 0
	s.endPersistent(c, sess, state)
}

// setWatches re-checks a reconnected session's watches against the zxid the
// client last saw, as DataTree.setWatches does, list by list (data, exist,
// child): a data watch fires NodeDeleted or NodeDataChanged if that
// happened meanwhile, an exist watch NodeCreated, a child watch NodeDeleted
// or NodeChildrenChanged; the others are registered again, withheld ones
// too (the client re-sends every watch it holds). These notifications are
// not filtered by ACL, as ZooKeeper's are not.
func (s *Server) setWatches(c *Conn, sess *session) {
	for _, kind := range [...]watchKind{kindData, kindExist, kindChild} {
		for _, w := range sess.watches {
			if w.done || w.kind != kind {
				continue
			}
			typ := changedSince(s.tree.nodes[w.path], kind, c.lastZxid)
			switch {
			case typ == 0 && w.withheld:
				w.withheld = false
				sess.withheld--
				s.register(w)
			case typ == 0:
			case c.lagging && !c.remote && s.deferWatch(c, w, kind):
			default:
				if !w.withheld {
					s.unregister(w)
				}
				s.notify(w, task.Event{Type: typ, State: task.StateConnected, Path: w.path})
			}
		}
	}
	live := sess.watches[:0]
	for _, w := range sess.watches {
		if !w.done {
			live = append(live, w)
		}
	}
	clear(sess.watches[len(live):])
	sess.watches = live
}

// changedSince is the event a watch of kind on n (nil: missing) fires in
// SetWatches for a client that last saw zxid, or 0.
func changedSince(n *node, kind watchKind, zxid int64) task.EventType {
	switch kind {
	case kindData:
		if n == nil {
			return task.EventNodeDeleted
		} else if n.stat.Mzxid > zxid {
			return task.EventNodeDataChanged
		}
	case kindExist:
		if n != nil {
			return task.EventNodeCreated
		}
	case kindChild:
		if n == nil {
			return task.EventNodeDeleted
		} else if n.stat.Pzxid > zxid {
			return task.EventNodeChildrenChanged
		}
	}
	return 0
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

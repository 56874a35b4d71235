package fakezk

import (
	"slices"

	"github.com/zkflow/zkflow/task"
)

// Persistent watches (addWatch), as ZooKeeper 3.8's WatchManager keeps
// them. The server keeps, per session, path and list (data, child), one
// registration with one mode (WatcherModeManager): addWatch registers in
// both lists, whatever the mode (3.8.0's DataTree.addWatch and
// setWatches; later versions keep recursive ones out of the child list),
// so a recursive watch on the path of a persistent one of the same session
// takes its child events away; a
// one-time watch set later on the same path and list replaces the
// registration with a standard one (setWatcherMode), so the persistent
// watch loses that list's events once the one-time watch has fired
// (ZOOKEEPER-4466, fixed in 3.9). A trigger notifies a session once
// (triggerWatch collects a set of watchers; deleteNode suppresses the
// child list's watchers the data list notified) and the client hands the
// notification to the watchers it holds that it concerns
// (ZKWatchManager.materialize, which gathers them in a set: a Watcher
// object registered several ways is called once): the one-time watches on
// the path, removed as they are handed out (data and exists watches for
// NodeCreated and NodeDataChanged, child watches for NodeChildrenChanged,
// all three for NodeDeleted), then the persistent watches on the path and
// the recursive ones on the path and on each of its ancestors up to "/".
// 3.8's client does that for every type, NodeChildrenChanged included
// (the server sends one to a session with a one-time or persistent child
// watch on the path); from 3.9.0 on (ZOOKEEPER-4475) it leaves the recursive watches
// out of NodeChildrenChanged, as materialize below does. A state change
// (type None) goes to the default watcher and to every watch.
//
// The client keeps its persistent watches (pwatch, in session.pwatches)
// apart from the server's registrations (preg, in Server.pdata and
// Server.pchild), since they can differ.

// pwatch is one AddWatch request's watch, as the client holds it.
type pwatch struct {
	sess      *session
	path      string
	recursive bool
	cb        func(task.Event)
	done      bool
}

// preg is the server's persistent registration of a session on a path in
// one list.
type preg struct {
	sess      *session
	recursive bool
}

// addPersistent registers a new watch of mode on path for sess, in the
// client and on the server (DataTree.addWatch). Lock held.
func (s *Server) addPersistent(sess *session, path string, mode task.AddWatchMode, cb func(task.Event)) {
	pw := &pwatch{sess: sess, path: path, recursive: mode == task.WatchPersistentRecursive, cb: cb}
	sess.pwatches = append(sess.pwatches, pw)
	s.pwatchN++
	s.registerPersistent(pw)
}

// registerPersistent sets pw's server registrations (addWatch, or
// SetWatches2 after a reconnect). Lock held.
func (s *Server) registerPersistent(pw *pwatch) {
	setPreg(s.pdata, pw.path, preg{sess: pw.sess, recursive: pw.recursive})
	setPreg(s.pchild, pw.path, preg{sess: pw.sess, recursive: pw.recursive})
	// 3.8 keeps one registration per session, path and list: a recursive
	// addWatch turns the session's one-time child watch on the path into
	// the recursive registration, which is sent no NodeChildrenChanged
	// (the watch still fires with the node's deletion); a persistent one
	// leaves it a watch that fires with the next child change.
	for _, w := range s.childW[pw.path] {
		if w.sess == pw.sess {
			w.muted = pw.recursive
		}
	}
}

// setPreg sets the mode of r.sess's registration on path (one per session).
func setPreg(table map[string][]preg, path string, r preg) {
	regs := table[path]
	for i := range regs {
		if regs[i].sess == r.sess {
			regs[i] = r
			return
		}
	}
	table[path] = append(regs, r)
}

// dropPreg removes sess's registration on path; it reports whether there
// was one.
func dropPreg(table map[string][]preg, path string, sess *session) bool {
	regs := table[path]
	for i := range regs {
		if regs[i].sess == sess {
			regs = append(regs[:i:i], regs[i+1:]...)
			if len(regs) == 0 {
				delete(table, path)
			} else {
				table[path] = regs
			}
			return true
		}
	}
	return false
}

// downgrade is setWatcherMode(STANDARD) for a one-time watch of kind that
// sess sets on path: the session's persistent registration in that list
// goes. Lock held.
func (s *Server) downgrade(sess *session, path string, kind watchKind) {
	if s.pwatchN == 0 {
		return
	}
	if kind == kindChild {
		dropPreg(s.pchild, path, sess)
		for _, w := range s.childW[path] {
			if w.sess == sess {
				w.muted = false // the registration is a standard one again
			}
		}
	} else {
		dropPreg(s.pdata, path, sess)
	}
}

// persistentNotified adds to got the sessions the server's persistent
// registrations notify of typ on path (triggerWatch, in the data list for
// created, data-changed and deleted, in the child list for
// children-changed and deleted: a registration on the path itself, or a
// recursive one on an ancestor; never a recursive one for
// children-changed). A session whose connection is
// down, or which may not READ acl, is not notified. Lock held.
func (s *Server) persistentNotified(path string, typ task.EventType, acl []task.ACL, got []*session) []*session {
	add := func(sess *session) {
		c := sess.conn
		if c == nil || !c.connected || c.sess != sess || !allowed(acl, task.PermRead, c.who) {
			return
		}
		for _, x := range got {
			if x == sess {
				return
			}
		}
		got = append(got, sess)
	}
	walk := func(table map[string][]preg) {
		for p := path; ; p = parentOf(p) {
			for _, r := range table[p] {
				if r.recursive && typ == task.EventNodeChildrenChanged {
					continue
				}
				if r.recursive || p == path {
					add(r.sess)
				}
			}
			if p == "/" {
				break
			}
		}
	}
	if typ != task.EventNodeChildrenChanged {
		walk(s.pdata)
	}
	if typ == task.EventNodeChildrenChanged || typ == task.EventNodeDeleted {
		walk(s.pchild)
	}
	return got
}

// materialize hands a notification of typ on path that reached sess to
// the persistent watches its client holds (and, when notified from
// persistent registrations only, to its withheld one-time watches the
// notification concerns). Lock held.
func (s *Server) materialize(sess *session, path string, typ task.EventType, oneShot bool) {
	ev := task.Event{Type: typ, State: task.StateConnected, Path: path}
	for _, pw := range sess.pwatches {
		if pw.done {
			continue
		}
		if pw.recursive && typ == task.EventNodeChildrenChanged {
			continue
		}
		if pw.path == path || (pw.recursive && isAncestor(pw.path, path)) {
			s.enqueue(sess.conn, item{kind: itemWatch, fn: pw.cb, ev: ev})
		}
	}
	if oneShot || sess.withheld == 0 {
		return
	}
	for _, kind := range clientKinds(typ) {
		for _, x := range sess.watches {
			if x.withheld && !x.done && x.path == path && x.kind == kind {
				s.fireWatch(x, ev)
			}
		}
	}
}

// isAncestor reports whether a is a proper ancestor of p.
func isAncestor(a, p string) bool {
	if a == "/" {
		return p != "/"
	}
	return len(p) > len(a) && p[len(a)] == '/' && p[:len(a)] == a
}

// removeWatches is RemoveWatches of typ on path for c's session
// (DataTree.removeWatch on 3.8: Children takes the session's child-list
// registration, Data its data-list one, whatever their modes; Any both).
// The client ends the watches of typ it holds on path (Children: one-time
// child watches; Data: one-time data and exist watches; Any: those and its
// persistent watches) with EventWatchRemoved, before the reply. The error
// is NoWatcher when the server held no registration. Lock held.
func (s *Server) removeWatches(c *Conn, r *task.RemoveWatchesRequest) error {
	sess := c.sess
	removed := false
	// Kind by kind, in the order given, and each kind's watches in the
	// order they were set: the order in which the client (zkadapter)
	// ends them.
	dropOneShot := func(kinds ...watchKind) {
		for _, k := range kinds {
			for _, w := range sess.watches {
				if w.done || w.path != r.Path || w.kind != k {
					continue
				}
				if w.withheld {
					w.withheld = false
					sess.withheld--
				} else {
					s.unregister(w)
					removed = true
				}
				w.done = true
				s.enqueue(c, item{kind: itemWatch, fn: w.cb, ev: task.Event{Type: task.EventWatchRemoved, State: task.StateConnected, Path: w.path}})
			}
		}
	}
	switch r.Type {
	case task.WatcherChildren:
		removed = dropPreg(s.pchild, r.Path, sess)
		dropOneShot(kindChild)
	case task.WatcherData:
		removed = dropPreg(s.pdata, r.Path, sess)
		dropOneShot(kindData, kindExist)
	case task.WatcherAny:
		removed = dropPreg(s.pchild, r.Path, sess)
		removed = dropPreg(s.pdata, r.Path, sess) || removed
		dropOneShot(kindData, kindExist, kindChild)
		live := sess.pwatches[:0]
		for _, pw := range sess.pwatches {
			if pw.path == r.Path && !pw.done {
				pw.done = true
				s.pwatchN--
				s.enqueue(c, item{kind: itemWatch, fn: pw.cb, ev: task.Event{Type: task.EventWatchRemoved, State: task.StateConnected, Path: pw.path}})
				continue
			}
			live = append(live, pw)
		}
		clear(sess.pwatches[len(live):])
		sess.pwatches = live
	}
	if !removed {
		return task.CodeNoWatcher
	}
	return nil
}

// unregisterPersistent takes a dead session's registrations off the
// server. Lock held.
func (s *Server) unregisterPersistent(sess *session) {
	for _, pw := range sess.pwatches {
		dropPreg(s.pdata, pw.path, sess)
		dropPreg(s.pchild, pw.path, sess)
	}
}

// endPersistent ends every persistent watch of sess with EventNotWatching
// in state. Lock held.
func (s *Server) endPersistent(c *Conn, sess *session, state task.State) {
	for _, pw := range sess.pwatches {
		if !pw.done {
			pw.done = true
			s.pwatchN--
			s.enqueue(c, item{kind: itemWatch, fn: pw.cb, ev: task.Event{Type: task.EventNotWatching, State: state, Path: pw.path}})
		}
	}
	sess.pwatches = nil
}

// persistentState tells sess's persistent watches of a session transition
// (StateSuspended, StateConnected of the same session). Lock held.
func (s *Server) persistentState(c *Conn, sess *session, ev task.Event) {
	for _, pw := range sess.pwatches {
		if !pw.done {
			s.enqueue(c, item{kind: itemWatch, fn: pw.cb, ev: ev})
		}
	}
}

// resetPersistent is SetWatches2's persistent lists after a reconnect:
// every persistent watch the client holds is registered again, with no
// event for what changed meanwhile (DataTree.setWatches adds them without
// a zxid check). Lock held.
func (s *Server) resetPersistent(sess *session) {
	// The persistent list first, then the recursive one, as SetWatches2
	// carries them: on a path with both, the data list ends recursive.
	for _, rec := range [...]bool{false, true} {
		for _, pw := range sess.pwatches {
			if !pw.done && pw.recursive == rec {
				s.registerPersistent(pw)
			}
		}
	}
}

// WatchedPaths returns, sorted, the paths on which c's session holds a
// watch the server has not fired or removed: one-time data, exist and
// child watches (withheld ones too) and persistent watches; persistent
// lists, sorted, the paths with a persistent watch. Nil when c is not
// connected on a live session.
func (s *Server) WatchedPaths(c *Conn) (paths, persistent []string) {
	s.locked(func() {
		sess := c.sess
		if c.closed || c.dead || !c.connected || sess == nil || !sess.alive {
			return
		}
		for _, w := range sess.watches {
			if !w.done {
				paths = append(paths, w.path)
			}
		}
		for _, pw := range sess.pwatches {
			if !pw.done {
				paths = append(paths, pw.path)
				persistent = append(persistent, pw.path)
			}
		}
	})
	slices.Sort(paths)
	slices.Sort(persistent)
	return slices.Compact(paths), slices.Compact(persistent)
}

// RemoveWatchesNow applies, at once, a RemoveWatches of typ on path sent
// on c's session by another user of the session (a recursive cache of
// the path stopping, a user's removeAllWatches): the server drops the
// session's registrations as removeWatches says, and the client's
// watches of typ on path end with EventWatchRemoved, delivered in order
// with c's other deliveries. The reply goes to that other user, not to
// any request of c's. It reports whether the server held a registration
// (false: what the request would have answered with NoWatcher), and does
// nothing when c is not connected on a live session.
func (s *Server) RemoveWatchesNow(c *Conn, path string, typ task.WatcherType) bool {
	removed := false
	s.locked(func() {
		sess := c.sess
		if c.closed || c.dead || !c.connected || sess == nil || !sess.alive {
			return
		}
		if s.trace.on {
			s.tracef("fault remove-watches c%d %s type=%d", c.num, path, typ)
		}
		removed = s.removeWatches(c, &task.RemoveWatchesRequest{Path: path, Type: typ}) == nil
	})
	return removed
}

package cache

import (
	"errors"
	"slices"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/task"
)

// A TreeCache with WithRecursive follows its subtree with one
// persistent-recursive watch on the root (task.AddWatch) instead of a data
// and a child watch per node, as Curator's CuratorCache does. The follower
// of each session:
//
//  1. sets the watch (before any read, so every change after a read's
//     reply is reported);
//  2. walks the subtree without watches: the root is read, and every node
//     read for the first time is listed (the walk);
//  3. then reads each node an event names (NodeCreated, NodeDataChanged,
//     NodeDeleted, for the root and every node below it): a node found
//     missing is removed with its cached subtree, as in the default mode.
//     A node created after the walk needs no listing: the creation of each
//     of its children is an event of its own. The parent of a node created
//     or deleted is read too: its Cversion, NumChildren and Pzxid changed,
//     and the watch sends no NodeChildrenChanged;
//  4. when the session comes back after a disconnection (StateConnected
//     in the watch's stream), walks the whole subtree again: ZooKeeper
//     sets the watch again on reconnect but sends no event for what changed
//     while the session was away, so only a new walk sees it. The
//     connection sets the watch again before any read made after that
//     event. This walk lists every cached node and reads only those whose
//     listing shows another czxid or mzxid (and the new ones);
//  5. every watch re-read period (task.WatchRecheck: twice the session
//     timeout unless executor.Config.WatchRecheck says another, or none)
//     reads every cached node, and the root, again with a plain
//     exists (which needs no permission), as a one-time watch waited on
//     reads its node again (task.Watch): ZooKeeper sends no event of a
//     change to a node the session may not READ, so a node an operator
//     closed and someone deleted, or wrote, would stay cached as it was,
//     with its parent's Stat, for good. A node found gone, made again or
//     written is read again (step 3: its parent too), one whose children
//     changed (Pzxid, NumChildren, Cversion) listed again, what is new
//     under it walked. Each re-read is a background timer
//     (AfterFuncBackground, when the runtime has it), which keeps no
//     fake clock going.
//
// On a session expiry the watch ends with the session; the next session's
// follower starts at 1. A watch removed while the cache runs (by another
// recursive cache of the root on the session, stopping) is set again and
// the subtree walked. Stop removes the watch (RemoveWatches of type
// Any: every watch of the session on the root path goes, since ZooKeeper
// 3.8 cannot remove one watch alone; the other caches of the path read
// it again, which sets their watches again).

// Known bugs of the recursive mode, switched on by tests only.
const (
	// bugRecursiveNoReread: after a reconnect of the same session the
	// cache does not walk the subtree again, so what changed while it was
	// disconnected (no event tells) stays unseen.
	bugRecursiveNoReread canary.Name = "cache/recursive-no-reread-after-reconnect"
	// bugRecursiveCreatedIsNew: a NodeCreated event is taken to name a
	// node the cache cannot hold, so the cache forgets what it held at the
	// path and reports the node read as Added (a node deleted and created
	// again is held until its re-read: it must be Recreated, or Changed).
	bugRecursiveCreatedIsNew canary.Name = "cache/recursive-created-is-new"
	// bugPassWhileSettingWatch: setting the recursive watch again marks
	// the cache as running a pass, and its end as not: a pass under way
	// then goes on beside the one kicked once the watch is set, and the
	// first to find nothing left reports a snapshot while the other's
	// read is in flight (a child listed but not yet read, its parent
	// counting it).
	bugPassWhileSettingWatch canary.Name = "cache/pass-while-setting-watch"
	// bugRecursiveNoRecheck: the recursive mode never reads its nodes
	// again on its own: a change ZooKeeper withheld (a node the session
	// may not READ, deleted or written) stays unseen for good.
	bugRecursiveNoRecheck canary.Name = "cache/recursive-no-recheck"
)

func (e *engine) recursive() bool { return e.tree && e.opts.Recursive }

// setTreeWatch sets the follower's recursive watch on the root, then
// starts the walk. Passes wait until the watch is set.
func (e *engine) setTreeWatch(gen int) {
	f := e.follower
	if canary.On(bugPassWhileSettingWatch) {
		e.running = true
	} else {
		e.settingWatch = true
	}
	e.settingSess = e.sessID
	task.Run(f, read(task.AddWatch(e.node, task.WatchPersistentRecursive)), func(pw *task.PersistentWatch, err error) {
		if gen != e.gen {
			return
		}
		if canary.On(bugPassWhileSettingWatch) {
			e.running = false
		} else {
			e.settingWatch = false
		}
		if err != nil {
			e.fail(err)
			return
		}
		e.pw, e.pwSess = pw, e.sessID
		e.consume(f, gen, pw)
		e.kick()
		if !canary.On(bugRecursiveNoRecheck) {
			e.armRecheck(gen)
		}
	})
}

// armRecheck has the follower of gen read its nodes again (recheck) one
// watch re-read period from now (step 5). Executor goroutine.
func (e *engine) armRecheck(gen int) {
	e.stopRecheck()
	every := task.WatchRecheck(e.follower)
	if every < 0 {
		return // the runtime's watches read nothing again (executor.Config.WatchRecheck)
	}
	at := e.rt.Clock().Now().Add(every)
	fire := func() {
		if gen != e.gen || e.stopped() {
			return // a later follower's, or none
		}
		e.recheckT = nil
		e.recheck(gen)
	}
	if b, ok := e.rt.(interface {
		AfterFuncBackground(time.Time, func()) task.Timer
	}); ok {
		e.recheckT = b.AfterFuncBackground(at, fire)
		return
	}
	e.recheckT = e.rt.AfterFunc(at, fire)
}

// stopRecheck stops the re-read armed, if any.
func (e *engine) stopRecheck() {
	if e.recheckT != nil {
		e.recheckT.Stop()
		e.recheckT = nil
	}
}

// recheck reads the root and every cached node with exists, one at a
// time, in the follower of gen, marks what changed unseen (step 5), and
// arms the next re-read. An error other than connection loss (the
// session's end) stops it: the next follower reads everything.
func (e *engine) recheck(gen int) {
	f := e.follower
	e.mu.Lock()
	todo := make([]string, 0, len(e.cur)+1)
	for p := range e.cur {
		todo = append(todo, p)
	}
	e.mu.Unlock()
	if _, ok := e.get(e.node); !ok {
		todo = append(todo, e.node)
	}
	slices.Sort(todo)
	marked := false
	var step func(i int)
	step = func(i int) {
		if i == len(todo) {
			if marked {
				e.kick()
			}
			e.armRecheck(gen)
			return
		}
		p := todo[i]
		task.Run(f, read(task.Exists(p)), func(st *task.Stat, err error) {
			switch {
			case gen != e.gen:
				return
			case lost(err):
			case err != nil:
				return
			default:
				marked = e.rechecked(p, st) || marked
			}
			step(i + 1)
		})
	}
	step(0)
}

// rechecked marks p, read again with exists as st (nil: missing), for a
// read or a listing if it differs from what the cache holds, and reports
// whether it marked anything.
func (e *engine) rechecked(p string, st *task.Stat) bool {
	old, ok := e.get(p)
	switch {
	case !ok && st == nil:
		return false
	case !ok || st == nil || st.Czxid != old.Stat.Czxid:
		// Created, gone or made again: its read says which, and lists
		// what is new (a node read for the first time while walking).
		e.walking = true
		e.dirty.add(p)
		e.parentChanged(p)
		return true
	}
	marked := false
	if st.Mzxid != old.Stat.Mzxid {
		e.dirty.add(p)
		marked = true
	}
	if st.Pzxid != old.Stat.Pzxid || st.NumChildren != old.Stat.NumChildren || st.Cversion != old.Stat.Cversion {
		e.walking = true
		e.lists.add(p)
		marked = true
	}
	return marked
}

// consume takes the watch's events, one at a time, in the follower. The
// stream ends with the session (the next follower sets a new watch) or at
// Stop.
func (e *engine) consume(f *task.Scope, gen int, pw *task.PersistentWatch) {
	var loop func()
	loop = func() {
		task.Run(f, pw.Next(), func(ev task.Event, err error) {
			switch {
			case gen != e.gen:
				return
			case errors.Is(err, task.ErrWatchRemoved):
				// Removed by another user of the session (another
				// recursive cache of the root stopping): set it again and
				// walk, since changes may have gone unreported meanwhile.
				e.walk()
				e.setTreeWatch(gen)
				return
			case err != nil:
				return
			}
			e.onTreeEvent(ev)
			loop()
		})
	}
	loop()
}

// onTreeEvent marks what an event of the recursive watch says must be read.
func (e *engine) onTreeEvent(ev task.Event) {
	switch ev.Type {
	case task.EventNone:
		if ev.State != task.StateConnected || canary.On(bugRecursiveNoReread) {
			return
		}
		e.walk()
	case task.EventNodeCreated:
		if canary.On(bugRecursiveCreatedIsNew) {
			e.mu.Lock()
			e.uncache(ev.Path)
			e.mu.Unlock()
		}
		e.dirty.add(ev.Path)
		e.parentChanged(ev.Path)
	case task.EventNodeDeleted:
		e.dirty.add(ev.Path)
		e.parentChanged(ev.Path)
	case task.EventNodeDataChanged:
		e.dirty.add(ev.Path)
	default:
		return
	}
	e.kick()
}

// parentChanged marks for a read the parent of p, a node created or
// deleted below the root: its Cversion, NumChildren and Pzxid changed, and
// a recursive watch sends no NodeChildrenChanged to say so. Reads of
// several children's parent coalesce (dirty is a set).
func (e *engine) parentChanged(p string) {
	if p == e.node || canary.On(bugStaleParentStat) {
		return
	}
	if _, ok := e.get(task.Parent(p)); ok {
		e.dirty.add(task.Parent(p))
	}
}

// walk marks the whole subtree to be listed again. A listing carries the
// node's Stat: a cached node is read again only if the listing shows it
// changed (another czxid or mzxid) or gone, a listed child not cached is
// read (and, being new, listed in turn).
func (e *engine) walk() {
	e.walking = true
	if _, ok := e.get(e.node); !ok {
		e.dirty.add(e.node)
	}
	e.lists.add(e.node)
	for p := range e.cur {
		e.lists.add(p)
	}
}

// listed takes what a TreeCache's listing of d (in both modes) shows of
// d's own Stat: the same node with the same data (czxid and mzxid) has its
// Stat taken (Changed, if its children changed: Cversion, NumChildren,
// Pzxid); another node or other data is read again (with the data, and, in
// the default mode, its data watch has fired or will).
func (e *engine) listed(d string, st task.Stat) {
	if !e.tree {
		return
	}
	old, ok := e.get(d)
	switch {
	case !ok:
	case old.Stat.Czxid != st.Czxid || old.Stat.Mzxid != st.Mzxid:
		e.dirty.add(d)
	case old.Stat != st && !canary.On(bugStaleParentStat):
		e.put(Node{Path: d, Data: old.Data, Stat: st})
	}
}

// dropTreeWatch removes the recursive watch when the cache ends, if its
// session is still the current one. Executor goroutine.
func (e *engine) dropTreeWatch() {
	pw := e.pw
	e.pw = nil
	var path string
	var on int64
	switch {
	case e.rt == nil:
		return
	case pw != nil:
		path, on = pw.Path(), e.pwSess
	case e.settingWatch:
		// The AddWatch is in flight (its reply, which the ended
		// follower drops, has not come): the removal, sent after it on
		// the same session, is applied after it.
		e.settingWatch = false
		path, on = e.node, e.settingSess
	default:
		return
	}
	sess, st := e.rt.Current()
	if sess.ID != on || st == task.StateClosed {
		return
	}
	// Retried after connection loss (a removal the server may not have
	// seen leaves the watch set again by the reconnect); the session's end
	// ends the scope, and the watch with the session.
	s := e.rt.SessionScope().Child()
	task.Run(s, c.Retry(task.RemoveWatches(path, task.WatcherAny), retry), func(task.Unit, error) { s.Close() })
}

// listTask is read(e.childrenTask(d)); the one of the followed directory
// is a value built once.
func (e *engine) listTask(d string) task.Task[task.ChildrenWatch] {
	if d == "" || d != e.dir {
		return read(e.childrenTask(d))
	}
	as := [2]bool{e.recursive(), canary.On(bugNoRearmAfterLoss)}
	if e.dirList == nil || e.dirListAs != as {
		e.dirList, e.dirListAs = read(e.childrenTask(d)), as
	}
	return e.dirList
}

// childrenTask lists d: with a child watch, or, in the recursive mode,
// without (a nil Watch).
func (e *engine) childrenTask(d string) task.Task[task.ChildrenWatch] {
	if !e.recursive() {
		return task.ChildrenW(d)
	}
	return c.Map(task.Children(d), func(cl task.ChildList) task.ChildrenWatch { return task.ChildrenWatch{ChildList: cl} })
}

// dataTask reads p: with a data watch, or, in the recursive mode, without.
func (e *engine) dataTask(p string) task.Task[task.DataWatch] {
	if !e.recursive() {
		return task.GetW(p)
	}
	return c.Map(task.Get(p), func(d task.Data) task.DataWatch { return task.DataWatch{Data: d} })
}

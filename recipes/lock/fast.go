package lock

import (
	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/task"
)

// Re-acquiring without a listing (see "Re-acquiring" in the package
// documentation for the argument).
//
// ZooKeeper names a sequential child with its directory's count of child
// creates (a delete does not move it). So when our new contender's number
// is exactly one past the number of our previous node in the directory,
// nobody created a child there in between; if that previous node held the
// lock and our release deleted it before the new create was applied, no
// other contender can be in the queue: we hold the lock without listing.
// This only holds within one incarnation of the directory (a directory
// deleted and created again counts from zero). A watch on the directory
// says when it changes, but not always: ZooKeeper withholds the
// notification from a session that may no longer READ the directory (an
// operator's setAcl, which fires nothing). So the fast create is sent
// with a plain exists of the directory behind it, in the same round
// trip, and holds only if the directory is still the incarnation the
// watch was set on (its czxid).

// Known bugs of this path that tests switch back on (internal/canary).
const (
	// bugFastNoDirWatch: the directory watch is ignored when it fires: a
	// directory deleted and created again (an emptied Curator container
	// reaped by the server) counts from zero again, and its new
	// contenders' numbers can continue ours.
	bugFastNoDirWatch canary.Name = "lock/fast-path-without-directory-watch"
)

// maxWatchedDirs bounds the directories watched per session: beyond it,
// acquires take the listing path.
const maxWatchedDirs = 1024

// dirState is what one session knows of one lock directory. It is kept
// on its runtime (task.RuntimeValue) and used on its executor goroutine
// only.
type dirState struct {
	dir    string
	set    *sessionDirs
	armed  bool  // the exists watch on the directory is set and has not fired
	czxid  int64 // the directory's czxid when the watch was set: its incarnation
	last   int64 // number of our last node that held and that our release deleted; -1 if none
	hasRun bool  // last is valid
	direct bool  // the last acquire found no one else: try the fast path next time
	mon    *task.Scope
}

// sessionDirs is the directory states of one session of one executor,
// ended together when the connection blinks or the session ends.
type sessionDirs struct {
	all   map[int64]*sessionDirs // the runtime's sets, by session
	sess  int64
	dirs  map[string]*dirState
	unsub func()
}

var sessionsKey byte // the key of a runtime's sets of directories

// sessionsOf returns rt's sets of directories, by session.
func sessionsOf(rt task.Runtime) map[int64]*sessionDirs {
	return task.RuntimeValue(rt, &sessionsKey, func() map[int64]*sessionDirs { return map[int64]*sessionDirs{} })
}

// lookupDir returns the state of dir for s's session, or nil.
func lookupDir(s *task.Scope, dir string) *dirState {
	set := sessionsOf(s.Runtime())[s.Session().ID]
	if set == nil {
		return nil
	}
	return set.dirs[dir]
}

// watchDir starts watching dir for s's session, unless it is watched
// already or the session watches maxWatchedDirs directories. It is called
// while we hold the lock, so the directory holds our node and the watch is
// set on the incarnation our node's number counts in.
func watchDir(s *task.Scope, dir string) {
	rt, sess := s.Runtime(), s.Session()
	if _, st := rt.Current(); st != task.StateConnected {
		return
	}
	all := sessionsOf(rt)
	set := all[sess.ID]
	if set == nil {
		set = &sessionDirs{all: all, sess: sess.ID, dirs: map[string]*dirState{}}
		all[sess.ID] = set
		set.unsub = rt.Subscribe(func(ev task.Event) {
			if ev.Type == task.EventNone && ev.State != task.StateConnected {
				set.end()
			}
		})
	}
	if set.dirs[dir] != nil || len(set.dirs) >= maxWatchedDirs {
		return
	}
	d := &dirState{dir: dir, set: set, last: -1, direct: true}
	d.mon = rt.SessionScope().Child()
	set.dirs[dir] = d

	watch := c.Then(c.Retry(task.ExistsW(dir), retry), func(sw task.StatWatch) task.Task[task.Event] {
		if sw.Stat == nil {
			return task.Fail[task.Event](task.ErrNoNode)
		}
		d.armed, d.czxid = true, sw.Stat.Czxid
		return sw.Watch.Wait()
	})
	task.RunIn(d.mon, watch, func(_ task.Event, err error) {
		if err == nil && canary.On(bugFastNoDirWatch) {
			// The directory changed: ignored, until the session ends.
			rt.SessionScope().OnDone(func(error) { d.end() })
			return
		}
		d.end()
	})
}

// end forgets d: its directory changed, the monitor failed, or the
// session scope ended (expiry, or the executor stopped: then no event
// says so). The set goes with its last directory.
func (d *dirState) end() {
	if d.set.dirs[d.dir] == d {
		delete(d.set.dirs, d.dir)
	}
	last := len(d.set.dirs) == 0
	d.armed = false
	if d.mon != nil {
		mon := d.mon
		d.mon = nil
		mon.Cancel(task.ErrCanceled)
	}
	if last {
		d.set.end()
	}
}

// end forgets every directory of the set: the connection was lost or the
// session ended, so a change of a directory may not have been heard yet.
func (set *sessionDirs) end() {
	if set.all[set.sess] == set {
		delete(set.all, set.sess)
	}
	ds := make([]*dirState, 0, len(set.dirs))
	for _, d := range set.dirs {
		ds = append(ds, d)
	}
	for _, d := range ds {
		d.end()
	}
	if set.unsub != nil {
		set.unsub()
		set.unsub = nil
	}
}

// released records that our release deleted the node numbered seq, which
// held the lock (held false: an attempt that never held, remembered only
// by the canary).
func released(s *task.Scope, dir string, seq int64, held bool) {
	if !held {
		// Contenders below it may still be queued. (No history reaches
		// this with the fast path on: an attempt that never held either
		// saw another number and turned the fast path off (direct), or
		// lost its create's reply and the connection with it, which
		// forgets the directory.)
		return
	}
	if d := lookupDir(s, dir); d != nil && d.armed {
		d.last, d.hasRun = seq, true
	}
}

// fastTry reports whether an acquire on dir should create without the
// listing behind it, expecting the fast path to apply.
func fastTry(s *task.Scope, dir string) bool {
	d := lookupDir(s, dir)
	return d != nil && d.armed && d.hasRun && d.direct
}

// fastHold reports whether our new node numbered seq holds the lock
// without a listing: its number is one past our last node that held and
// that our release deleted, and the directory has not changed since: its
// watch has not fired, and dirCzxid, the directory's czxid read right
// after our create, is the one the watch was set on (a directory deleted
// and made again while the session could not READ it, its notification
// withheld, is forgotten here).
func fastHold(s *task.Scope, dir string, seq, dirCzxid int64) bool {
	d := lookupDir(s, dir)
	if d == nil || !d.hasRun || !d.armed {
		return false
	}
	if dirCzxid != d.czxid && !canary.On(bugFastNoDirWatch) {
		d.end() // another incarnation: what was remembered is void
		return false
	}
	if seq != d.last+1 {
		d.direct = false // someone else created a child: expect contention
		return false
	}
	// No one else created a child since our last hold: the next acquire
	// may create without the listing again.
	d.direct = true
	return true
}

// uncontended records that an acquire found no other contender.
func uncontended(s *task.Scope, dir string) {
	if d := lookupDir(s, dir); d != nil {
		d.direct = true
	}
}

package cache

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/task"
)

// Known bugs of the caches, switched on by tests only (internal/canary).
const (
	// bugVersionOnly: a re-read node is compared by version alone, so a
	// node deleted and re-created with the same version is taken for the
	// old one (the cache keeps the old node's Stat and data).
	bugVersionOnly canary.Name = "cache/version-only"
	// bugNoRearmAfterLoss: a read that fails with connection loss is not
	// tried again, so it sets no watch and the node is never read again
	// (a failed call sets no watch).
	bugNoRearmAfterLoss canary.Name = "cache/no-rearm-after-loss"
	// bugNoResync: after a session expiry (which ends every watch) the
	// cache does not read and watch again on the new session.
	bugNoResync canary.Name = "cache/no-resync-after-expiry"
	// bugStaleParentStat: a TreeCache keeps a node's Stat as of its last
	// read, so a child created or deleted leaves the parent's Cversion,
	// NumChildren and Pzxid stale (the listing's Stat is not taken, the
	// recursive mode does not read the parent again).
	bugStaleParentStat canary.Name = "cache/stale-parent-stat"
	// bugNoRelistSaturated: after a reconnect of the same session the
	// cache relies on its child watches alone, also on a directory whose
	// counter has run out, where a create moves no Pzxid, so that the
	// watch set again on reconnect does not fire for a child created while
	// the session was away.
	bugNoRelistSaturated canary.Name = "cache/no-relist-saturated"
	// bugPassBeforeSync: a reconnect of a new session before its sync is
	// done (the relist of the saturated directories) starts a pass that
	// reads from a member that may be behind what the cache read on the
	// old session.
	bugPassBeforeSync canary.Name = "cache/pass-before-sync"
	// bugNextLostOnCancel: a blocking Next whose ctx ends just as its
	// difference is handed to it returns ctx's error, and the difference
	// counts as returned all the same: the caller never sees it.
	bugNextLostOnCancel canary.Name = "cache/next-lost-on-cancel"
	// bugNextLostBesideAnother: another goroutine's Next is served while
	// such a difference is being handed over (from the snapshot it was
	// handed), and the hand-back, coming after it, is dropped: neither
	// reports the difference.
	bugNextLostBesideAnother canary.Name = "cache/next-lost-beside-another"
	// bugServeDuringResync: a session expiry that cuts a pass short
	// leaves the cache counted as at a consistent snapshot, so a Next
	// waiting then is served what the pass had read so far (a child
	// removed, its parent's Stat not yet read again).
	bugServeDuringResync canary.Name = "cache/serve-during-resync"
	// bugNoSyncNewSession: the cache reads everything again on a new
	// session (after an expiry) without a sync first: a member behind
	// what the old session read answers, and the cache goes back in time.
	bugNoSyncNewSession canary.Name = "cache/no-sync-new-session"
)

// ErrStopped is a cache's Err after Stop.
var ErrStopped = errors.New("cache: stopped")

// ErrStarted is returned by Start on a cache already started.
var ErrStarted = fmt.Errorf("cache: already started: %w", task.ErrInvalidArgument)

// retry repeats a read whose outcome a retry settles (connection loss, not
// sent). The retry waits for the reconnect (the executor's task queue is
// paused while suspended); the backoff only spaces retries of a connection
// that keeps failing.
var retry = c.Policy{Backoff: c.Backoff{Initial: 10 * time.Millisecond, Max: time.Second, Multiplier: 2, Jitter: 0.5}}

// engine follows one directory's children (dir set), one node (node
// set) or a subtree (node set, tree true) on one executor, across
// reconnects and session expiries.
type engine struct {
	dir, node string
	tree      bool
	opts      options

	mu   sync.Mutex
	cur  map[string]Node
	err  error
	done chan struct{}

	// executor goroutine only
	rt       task.Runtime
	started  bool
	sessID   int64
	gen      int         // one per follower; completions of older ones are ignored
	passNext func(error) // pass's next for generation passGen: made once per generation
	passGen  int
	// dirList is listTask's task for dir, built with the mode and canary
	// state dirListAs says (built again if they differ).
	dirList   task.Task[task.ChildrenWatch]
	dirListAs [2]bool
	follower  *task.Scope
	lists     pathSet // directories to list
	// saturated holds the directories whose last listing showed their
	// counter run out (stored cversion at int32's maximum): a create under
	// one moves neither its cversion nor its Pzxid, so the child watch
	// set again on a reconnect (fired only if Pzxid passed the last zxid
	// the client saw) misses a child created while the session was away.
	// A reconnect lists them again. Made at the first.
	saturated map[string]bool
	// reconnects counts the reconnects of the session: a listing taken
	// before one (its reply queued while the session was suspended) but
	// handled after it showed the directory's counter run out too late
	// for that reconnect's relist, and lists it again.
	reconnects uint64
	// syncing: a new session's sync (follow) is under way; no pass starts
	// before it is done, not even a reconnect's relist of the saturated
	// directories (a reconnect of the new session, before its client has
	// seen any zxid, may reach a member behind what the cache read on the
	// old one).
	syncing bool
	dirty   pathSet                    // nodes to read
	kids    map[string]map[string]bool // the cached paths by parent (childrenOf); mu
	running bool
	// settingWatch: the recursive mode's watch is being set (setTreeWatch);
	// no pass takes work and no Next is served until it is, so that what
	// the walk reads is read under the watch.
	settingWatch bool
	synced       bool
	first        func(error)
	seen         map[string]Node // as of the last Next (nil: none yet)
	unseen       bool            // cur may differ from seen (a change since seen was taken)
	waiters      []*waiter
	served       uint64 // Nexts served
	handing      uint64 // the serve a blocking caller has yet to take or give back (handed), or 0
	unsub        func()
	pw           *task.PersistentWatch // the recursive mode's watch (recursive.go)
	pwSess       int64                 // the session it was set on
	settingSess  int64                 // the session an AddWatch in flight was sent on
	walking      bool                  // the recursive mode lists every node it reads for the first time
	recheckT     task.Timer            // the recursive mode's next re-read of its nodes (recheck)
}

func newEngine(dir, node string, opts options) *engine {
	return &engine{dir: dir, node: node, opts: opts, cur: map[string]Node{}, done: make(chan struct{})}
}

// start subscribes to session events and starts the first follower; the
// task succeeds at the first consistent snapshot.
func (e *engine) start() task.Task[task.Unit] { return e.startWith(false) }

// startWith is start; with keep, a start abandoned because its flow's
// session expired leaves the cache running (it follows the next session
// itself), for awaitFirst to wait on: a Client's Start waits so across
// an expiry, with one cache, so that its OnEvent stream is one history.
func (e *engine) startWith(keep bool) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		if e.started {
			k(task.Unit{}, ErrStarted)
			return
		}
		if err := e.Err(); err != nil {
			k(task.Unit{}, err) // stopped before it started: it never will
			return
		}
		e.started = true
		e.rt = s.Runtime()
		e.waitFirst(s, k, keep, func() {
			e.unsub = e.rt.Subscribe(e.onSession)
			e.follow()
		})
	}
}

// awaitFirst waits for the first consistent snapshot of a cache started
// with keep (startWith) whose start was abandoned at an expiry.
func (e *engine) awaitFirst() task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		if err := e.Err(); err != nil {
			k(task.Unit{}, err)
			return
		}
		if e.synced {
			k(task.Unit{}, nil)
			return
		}
		e.waitFirst(s, k, true, nil)
	}
}

// waitFirst parks k until the first consistent snapshot (quiescent) or
// the cache's end, and then runs begin, if not nil. Abandoned first (the
// scope ended), it stops the cache, but for a session's expiry with keep.
func (e *engine) waitFirst(s *task.Scope, k task.Cont[task.Unit], keep bool, begin func()) {
	task.Suspend(s, k, func(resume task.Cont[task.Unit]) func() {
		e.first = func(err error) { resume(task.Unit{}, err) }
		if begin != nil {
			begin()
		}
		return func() {
			e.first = nil
			if keep && errors.Is(s.Err(), task.ErrSessionExpired) {
				return
			}
			e.end(s.Err())
		}
	})
}

func (e *engine) onSession(ev task.Event) {
	if ev.Type != task.EventNone {
		return
	}
	switch ev.State {
	case task.StateConnected:
		if ev.SessionID == e.sessID {
			e.reconnects++
			e.relistSaturated()
			return
		}
		if canary.On(bugNoResync) {
			return
		}
		e.follow()
	case task.StateClosed:
		e.end(task.ErrClosed)
	}
}

// relistSaturated lists again, after a reconnect of the same session,
// the directories whose counter has run out (saturated).
func (e *engine) relistSaturated() {
	if len(e.saturated) == 0 || canary.On(bugNoRelistSaturated) {
		return
	}
	for d := range e.saturated {
		e.lists.add(d)
	}
	e.kick()
}

// counterRunOut reports whether a listing's Stat shows its directory's
// counter at int32's maximum. Clients are shown 2*cversion - numChildren
// in int32 arithmetic (DataNode.copyStat); the stored cversion is never
// negative, so it is that sum halved in uint32.
func counterRunOut(st task.Stat) bool {
	return (uint32(st.Cversion)+uint32(st.NumChildren))/2 == math.MaxInt32
}

// follow starts reading and watching everything again on the current
// session: after an expiry every watch is gone and the cache may be stale.
func (e *engine) follow() {
	if f := e.follower; f != nil {
		e.follower = nil
		f.Cancel(task.ErrSessionExpired)
		f.Close()
	}
	sess, _ := e.rt.Current()
	again := e.sessID != 0 // a session after the first: its reads sync first
	e.sessID = sess.ID
	e.gen++
	e.stopRecheck()
	e.follower = e.rt.SessionScope().Child()
	// The recursive mode's passes wait for its watch (setTreeWatch, below).
	e.running, e.settingWatch = false, e.recursive() && !canary.On(bugPassWhileSettingWatch)
	// A pass the expiry cut short left cur part read: no Next is served
	// until the new session's pass ends at a consistent snapshot.
	if !canary.On(bugServeDuringResync) {
		e.synced = false
	}
	if e.dir != "" {
		e.lists.add(e.dir)
	}
	switch {
	case e.recursive():
		e.walk()
	default:
		if e.node != "" {
			e.dirty.add(e.node)
		}
		for p := range e.cur {
			e.dirty.add(p)
			if e.tree {
				e.lists.add(p)
			}
		}
	}
	gen := e.gen
	e.walking = true
	e.pw = nil
	start := func() {
		switch {
		case gen != e.gen:
		case e.recursive():
			e.setTreeWatch(gen)
		default:
			e.kick()
		}
	}
	e.syncing = false
	if !again || canary.On(bugNoSyncNewSession) {
		e.rt.Schedule(start)
		return
	}
	e.syncing = !canary.On(bugPassBeforeSync)
	// A new session may reach a member behind what the cache read on the
	// old one (its client presents no zxid): the sync catches the member
	// up, so the reads after it never take the cache back in time.
	e.rt.Schedule(func() {
		if gen != e.gen {
			return
		}
		task.Run(e.follower, c.Retry(task.Sync(e.syncPath()), retry), func(_ task.Unit, err error) {
			if gen != e.gen || err != nil && e.follower.Err() != nil {
				return // another session, or the cache ended
			}
			e.syncing = false
			start()
		})
	})
}

// syncPath is the path the cache syncs after a new session: the one it
// follows (ZooKeeper's sync needs no node there).
func (e *engine) syncPath() string {
	if e.dir != "" {
		return e.dir
	}
	return e.node
}

// kick starts a pass unless one is running.
func (e *engine) kick() {
	if e.running || e.settingWatch || e.syncing || e.follower == nil || e.stopped() {
		return
	}
	e.running = true
	e.pass(e.gen)
}

// pass reads what is dirty, one read at a time, until nothing is, then
// reports a consistent snapshot.
func (e *engine) pass(gen int) {
	if e.settingWatch && !canary.On(bugPassWhileSettingWatch) {
		// The recursive watch is being set again (it was removed): this
		// pass stops here, and the one kicked once the watch is set reads
		// what is left, under the watch.
		e.running = false
		return
	}
	f := e.follower
	next := e.passNext
	if next == nil || e.passGen != gen {
		next = func(err error) {
			if gen != e.gen {
				return // an older session's follower
			}
			if err != nil {
				e.running = false
				e.fail(err)
				return
			}
			e.pass(gen)
		}
		e.passNext, e.passGen = next, gen
	}
	switch {
	case e.lists.len() > 0:
		d, _ := e.lists.take()
		e.list(f, gen, d, next)
	case e.dirty.len() > 0:
		p, _ := e.dirty.take()
		e.read(f, gen, p, next)
	default:
		e.running = false
		e.walking = false
		e.quiescent()
	}
}

// bugDropRemovedWatch: a one-time watch that another user of the
// session removed (RemoveWatches of the path: a recursive cache of it
// stopping) is dropped as if the session had ended, and the cache stops
// following the node for the rest of the session.
const bugDropRemovedWatch canary.Name = "cache/drop-removed-watch"

// read runs t with the retry policy (or, under the canary, without it:
// a read lost to connection loss then sets no watch and is dropped).
func read[T any](t task.Task[T]) task.Task[T] {
	if canary.On(bugNoRearmAfterLoss) {
		return t
	}
	return c.Retry(t, retry)
}

// lost reports an error after which the canary drops the read.
func lost(err error) bool {
	return canary.On(bugNoRearmAfterLoss) && (errors.Is(err, task.ErrConnectionLoss) || errors.Is(err, task.ErrNotSent))
}

// arm waits for w in the follower and marks what must be read again.
// What is marked is p: listed again if dir, else read again.
func (e *engine) arm(f *task.Scope, gen int, w *task.Watch, p string, dir bool) {
	task.Run(f, w.Wait(), func(_ task.Event, err error) {
		removed := errors.Is(err, task.ErrWatchRemoved) && !canary.On(bugDropRemovedWatch)
		if err != nil && !removed || gen != e.gen || e.stopped() {
			return // expiry or stop: the next follower reads everything
		}
		// Fired, or removed by another user of the session (a recursive
		// cache of the path stopping: RemoveWatches takes every watch of
		// the session on it): read again, which sets the watch again
		// and finds what changed meanwhile.
		if dir {
			e.lists.add(p)
		} else {
			e.dirty.add(p)
		}
		e.kick()
	})
}

// list lists directory d with a watch: cached children of d not listed
// are removed, listed children not cached are marked to be read. When the
// directory of a ChildrenCache is missing, it is watched with exists until
// it is created; in a tree, a missing directory is a removed node, which
// its own read reports.
func (e *engine) list(f *task.Scope, gen int, d string, next func(error)) {
	rc := e.reconnects
	task.Run(f, e.listTask(d), func(cw task.ChildrenWatch, err error) {
		if gen != e.gen {
			return
		}
		if err != nil && !lost(err) {
			delete(e.saturated, d)
		}
		switch {
		case lost(err):
			next(nil)
		case errors.Is(err, task.ErrNoNode) && e.tree:
			e.dirty.add(d) // gone: its read removes it and what is under it
			next(nil)
		case errors.Is(err, task.ErrNoNode):
			task.Run(f, read(task.ExistsW(d)), func(sw task.StatWatch, err error) {
				switch {
				case gen != e.gen:
				case lost(err):
					next(nil)
				case err != nil:
					next(err)
				case sw.Stat != nil: // created meanwhile
					e.lists.add(d)
					next(nil)
				default:
					e.arm(f, gen, sw.Watch, d, true)
					for _, p := range e.childrenOf(d) {
						e.remove(p)
					}
					next(nil)
				}
			})
		case err != nil:
			next(err)
		default:
			if cw.Watch != nil {
				e.arm(f, gen, cw.Watch, d, true)
			}
			e.listed(d, cw.Stat)
			if counterRunOut(cw.Stat) {
				if e.saturated == nil {
					e.saturated = map[string]bool{}
				}
				e.saturated[d] = true
				if e.reconnects != rc && !canary.On(bugNoRelistSaturated) {
					e.lists.add(d) // what came meanwhile fired no watch: list again
				}
			} else {
				delete(e.saturated, d)
			}
			cached := 0
			for _, n := range cw.Names {
				if e.cachedChild(d, n) {
					cached++
				} else {
					e.dirty.add(task.Join(d, n))
				}
			}
			// The names are distinct: as many cached as d has cached
			// children, and every one of those is listed. Fewer: some
			// are gone.
			if cached < e.childCount(d) {
				listed := make(map[string]bool, len(cw.Names))
				for _, n := range cw.Names {
					listed[task.Join(d, n)] = true
				}
				for _, p := range e.childrenOf(d) {
					if !listed[p] {
						e.remove(p)
					}
				}
			}
			next(nil)
		}
	})
}

// childrenOf returns the cached children of d, sorted (from the index
// kept by parent: a listing of one directory of a large tree costs its
// children, not a pass over the cache, which made a tree's start on n
// nodes O(n²)).
func (e *engine) childrenOf(d string) []string {
	e.mu.Lock()
	out := make([]string, 0, len(e.kids[d]))
	for p := range e.kids[d] {
		out = append(out, p)
	}
	e.mu.Unlock()
	slices.Sort(out)
	return out
}

// childCount is the number of cached children of d.
func (e *engine) childCount(d string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.kids[d])
}

// cachedChild reports whether d's child named n is cached. Its path is
// built on the stack, for the lookup alone: a listing's children that
// the cache has already cost no string each.
func (e *engine) cachedChild(d, n string) bool {
	var buf [128]byte
	b := append(buf[:0], d...)
	if d != "/" {
		b = append(b, '/')
	}
	b = append(b, n...)
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.cur[string(b)]
	return ok
}

// index records cached path p under its parent, for childrenOf. e.mu
// held.
func (e *engine) index(p string) {
	d := task.Parent(p)
	if d == p {
		return // the root
	}
	if e.kids == nil {
		e.kids = map[string]map[string]bool{}
	}
	k := e.kids[d]
	if k == nil {
		k = map[string]bool{}
		e.kids[d] = k
	}
	k[p] = true
}

// uncache drops p from the cache and from its parent's index. e.mu held.
func (e *engine) uncache(p string) {
	delete(e.cur, p)
	e.unseen = true
	d := task.Parent(p)
	if k := e.kids[d]; k != nil {
		delete(k, p)
		if len(k) == 0 {
			delete(e.kids, d)
		}
	}
}

// read reads node p with a data watch. A missing child is removed (its
// directory's watch tells when it comes back); a missing followed node (a
// NodeCache's, a TreeCache's root) is removed and watched with exists
// until it is created. In a tree, a node read for the first time is
// listed too.
func (e *engine) read(f *task.Scope, gen int, p string, next func(error)) {
	task.Run(f, read(e.dataTask(p)), func(dw task.DataWatch, err error) {
		if gen != e.gen {
			return
		}
		switch {
		case lost(err):
			next(nil)
		case errors.Is(err, task.ErrNoNode) && p == e.node && !e.recursive():
			task.Run(f, read(task.ExistsW(p)), func(sw task.StatWatch, err error) {
				switch {
				case gen != e.gen:
				case lost(err):
					next(nil)
				case err != nil:
					next(err)
				case sw.Stat != nil:
					e.dirty.add(p) // created meanwhile: read it
					next(nil)
				default:
					e.arm(f, gen, sw.Watch, p, false)
					e.remove(p)
					next(nil)
				}
			})
		case errors.Is(err, task.ErrNoNode):
			if e.recursive() {
				// Gone with no event that told (its NodeDeleted withheld:
				// the session may not read it): the parent's Stat, read
				// before, still counts it, and its children changed.
				e.parentChanged(p)
			}
			e.remove(p)
			next(nil)
		case err != nil:
			next(err)
		default:
			if dw.Watch != nil {
				e.arm(f, gen, dw.Watch, p, false)
			}
			n := Node{Path: p, Stat: dw.Stat}
			if e.opts.Data || e.dir == "" && !e.tree {
				n.Data = dw.Data.Data
			}
			old, had := e.get(p)
			if e.tree && (!had || old.Stat.Czxid != n.Stat.Czxid) && (e.walking || !e.recursive()) {
				e.lists.add(p) // new here: follow its children too
			}
			e.put(n)
			next(nil)
		}
	})
}

func (e *engine) get(p string) (Node, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.cur[p]
	return n, ok
}

func (e *engine) snapshot() map[string]Node {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := make(map[string]Node, len(e.cur))
	for p, n := range e.cur {
		m[p] = n
	}
	return m
}

// put records n and reports how it differs from the cached node.
func (e *engine) put(n Node) {
	old, ok := e.get(n.Path)
	var typ EventType
	if !ok {
		typ = Added
	} else if typ = classify(old, n, canary.On(bugVersionOnly)); typ == 0 {
		return
	}
	e.mu.Lock()
	e.cur[n.Path] = n
	e.unseen = true
	if !ok {
		e.index(n.Path)
	}
	e.mu.Unlock()
	ev := Event{Type: typ, Path: n.Path, Node: n}
	if ok {
		ev.Prev = old
	}
	e.emit(ev)
}

func (e *engine) remove(p string) {
	if e.tree { // what was under it went first
		for _, c := range e.childrenOf(p) {
			e.remove(c)
		}
		e.lists.del(p)
	}
	e.dirty.del(p)
	old, ok := e.get(p)
	if !ok {
		return
	}
	e.mu.Lock()
	e.uncache(p)
	e.mu.Unlock()
	e.emit(Event{Type: Removed, Path: p, Prev: old})
}

func (e *engine) emit(ev Event) {
	if e.opts.OnEvent != nil && !e.stopped() {
		e.opts.OnEvent(ev)
	}
}

// quiescent runs when every notified change has been read: the cache is
// a consistent snapshot. It resumes Start and the waiting Nexts.
func (e *engine) quiescent() {
	if e.stopped() {
		return
	}
	e.synced = true
	if e.opts.OnSynced != nil {
		e.opts.OnSynced()
	}
	if f := e.first; f != nil && !e.stopped() {
		e.first = nil
		f(nil)
	}
	e.wake()
}

// wake resumes the first waiting Next if the snapshot differs from the
// one it returned last.
func (e *engine) wake() {
	if len(e.waiters) == 0 || !e.synced || e.running || e.settingWatch {
		return
	}
	if e.handing != 0 && !canary.On(bugNextLostBesideAnother) {
		return // a blocking caller has yet to take or give back its difference
	}
	if !e.unseen {
		return // nothing cached changed since seen was taken
	}
	cur := e.snapshot()
	ch := diff(e.seen, cur)
	if ch.Empty() {
		e.unseen = false // changed, and back as it was
		return
	}
	w := e.waiters[0]
	e.waiters = e.waiters[1:]
	e.served++
	w.prev, w.served = e.seen, e.served
	e.seen, e.unseen = cur, false
	w.k(ch, nil)
}

// served is a Next's difference with what it takes to hand it back.
type served struct {
	ch     Change
	prev   map[string]Node
	served uint64
}

// nextServed is next with what giveBack needs: the blocking face's
// Next, whose caller may leave (its ctx ended) just as it is served.
func (e *engine) nextServed() task.Task[served] {
	return func(s *task.Scope, k task.Cont[served]) {
		if err := e.Err(); err != nil {
			k(served{}, err)
			return
		}
		if err := e.unservable(s); err != nil {
			k(served{}, err)
			return
		}
		var w *waiter
		e.nextWith(s, func(ch Change, err error) {
			if err != nil {
				k(served{}, err)
				return
			}
			e.handing = w.served // until the caller takes it or gives it back
			k(served{ch, w.prev, w.served}, nil)
		}, func(nw *waiter) { w = nw })
	}
}

// giveBack undoes the serving of a Next whose caller never got its
// difference (its ctx ended as it was served): the snapshot counts as
// not returned, and the next Next returns this difference too. No other
// Next is served while a blocking caller's difference is being handed
// over (handing), so none can have been served since. Executor
// goroutine.
func (e *engine) giveBack(sv served) {
	if e.served != sv.served || canary.On(bugNextLostOnCancel) {
		return
	}
	e.seen, e.unseen = sv.prev, true
	e.wake()
}

// handed ends the hand-over of a blocking caller's difference: taken, or
// given back (back) as its ctx ended; the next Next may then be served.
// Executor goroutine.
func (e *engine) handed(sv served, back bool) {
	if back {
		e.giveBack(sv)
	}
	if e.handing == sv.served {
		e.handing = 0
		e.wake()
	}
}

// next is the Next task of both caches.
func (e *engine) next() task.Task[Change] {
	return func(s *task.Scope, k task.Cont[Change]) {
		if err := e.Err(); err != nil {
			k(Change{}, err)
			return
		}
		if err := e.unservable(s); err != nil {
			k(Change{}, err)
			return
		}
		e.nextWith(s, k, nil)
	}
}

// unservable says why a Next run on s cannot wait for e: e has not
// started (nothing would ever serve it), or s runs on another executor
// than the cache's, whose goroutine alone may touch the cache's state.
func (e *engine) unservable(s *task.Scope) error {
	if !e.started {
		return fmt.Errorf("cache: Next before Start: %w", task.ErrInvalidArgument)
	}
	if s.Runtime() != e.rt {
		return fmt.Errorf("cache: Next on another executor than the cache's: %w", task.ErrInvalidArgument)
	}
	return nil
}

// nextWith waits in the queue of Nexts; made, if not nil, is told of the
// waiter.
func (e *engine) nextWith(s *task.Scope, k task.Cont[Change], made func(*waiter)) {
	task.Suspend(s, k, func(resume task.Cont[Change]) func() {
		w := &waiter{k: resume}
		if made != nil {
			made(w)
		}
		e.waiters = append(e.waiters, w)
		e.wake()
		return func() { // abandoned: forget the waiter
			if i := slices.Index(e.waiters, w); i >= 0 {
				e.waiters = slices.Delete(e.waiters, i, i+1)
			}
		}
	})
}

func (e *engine) stopped() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err != nil
}

// Err is nil while the cache runs, then why it ended.
func (e *engine) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

func (e *engine) stop() task.Task[task.Unit] {
	return task.Func(func(*task.Scope) (task.Unit, error) {
		e.end(ErrStopped)
		return task.Unit{}, nil
	})
}

// fail ends the cache on an error no retry settles. Session expiry and
// cancellation of a follower are not failures: the next session's
// follower takes over.
func (e *engine) fail(err error) {
	switch {
	case errors.Is(err, task.ErrSessionExpired), errors.Is(err, task.ErrCanceled):
	case errors.Is(err, task.ErrClosed):
		e.end(task.ErrClosed)
	default:
		what := e.dir
		if what == "" {
			what = e.node
		}
		e.end(fmt.Errorf("cache: %s: %w", what, err))
	}
}

// end ends the cache with err unless it already ended. Executor goroutine.
func (e *engine) end(err error) {
	if err == nil {
		err = ErrStopped
	}
	e.mu.Lock()
	if e.err != nil {
		e.mu.Unlock()
		return
	}
	e.err = err
	close(e.done)
	e.mu.Unlock()
	if e.unsub != nil {
		e.unsub()
		e.unsub = nil
	}
	e.gen++
	e.stopRecheck()
	e.dropTreeWatch()
	if f := e.follower; f != nil {
		// Close, not only Cancel: a canceled scope stays linked under
		// the session scope, which outlives the cache, until it is closed.
		e.follower = nil
		f.Cancel(task.ErrCanceled)
		f.Close()
	}
	if f := e.first; f != nil {
		e.first = nil
		f(err)
	}
	ws := e.waiters
	e.waiters = nil
	for _, w := range ws {
		w.k(Change{}, err)
	}
	if e.opts.OnEnd != nil {
		e.opts.OnEnd(err)
	}
}

type waiter struct {
	k task.Cont[Change]
	// Set as the waiter is served: the snapshot the previous Next had
	// returned, and the count of Nexts served with this one.
	prev   map[string]Node
	served uint64
}

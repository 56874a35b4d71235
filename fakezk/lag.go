package fakezk

import (
	"bytes"
	"cmp"
	"slices"
	"time"

	"github.com/zkflow/zkflow/task"
)

// A lagging member (Lag). In an ensemble a session talks to one member,
// and a follower applies the leader's committed transactions some time
// after the leader: a read it serves may miss writes that other sessions
// have already seen acknowledged. ZooKeeper promises each session only
// that its view never goes back, that it sees its own writes, and that
// it sees a watch's notification before the data that triggered it; a
// sync makes the member catch up first.
//
// The fake models it per Conn. A lagging Conn has a view: the zxid its
// member has applied. Its reads (exists, getData, getChildren) are
// answered from the tree as of the view, kept as the nodes' prior
// versions (hist, kids) while any Conn lags or KeepHistory is on. A read
// with a watch catches the view up first, unless LagWatchedReads is on:
// then it is answered from the view too, and the watch fires when the
// member applies a change after the view that fires it (held back until
// then: fireDeferred) and is set on the server otherwise. Everything else
// catches the view up to the server's zxid, as a member that has just
// applied everything would answer: a write or a sync (after it is
// applied: the member applies it, and what came before, before it
// replies), any other request, and a notification queued for the session
// (the member sends it as it applies the transaction). A session event
// (connection lost, expired, closed) ends the lag: the client may come
// back through another member, and none may serve it older data than it
// has seen. The lag ends by itself after its duration, and in
// deterministic mode the scheduler catches a lagging view up part of the
// way now and then (not one LagHeld started). A session that comes back
// through a lagging member (LagAtReconnect) gets the notifications
// SetWatches owes it for changes the member has not applied as the member
// applies them (deferWatch). Every answer it gives is one a real ensemble
// can give (fakezk/PROTOCOL.md, Lag).

// snap is a node as it was before a transaction changed it. Its children
// are not copied: kidEntry records each one added or removed.
type snap struct {
	data []byte
	acl  []task.ACL
	stat task.Stat // as the client sees it (clientStat)
}

// kidEntry is a child name a transaction added to, or removed from, a
// node's children.
type kidEntry struct {
	zxid  int64
	name  string
	added bool
}

// histEntry says what path was before the transaction zxid changed it;
// prior nil: it did not exist.
type histEntry struct {
	zxid  int64
	prior *snap
	evs   evMask // what the transaction did to the node
}

// pathHist is one path's history while it is kept: its prior versions
// and the changes of its children, each in zxid order. One map entry
// holds both, and a transaction's changes are appended in place, so that
// recording one looks the path up once.
type pathHist struct {
	hist []histEntry
	kids []kidEntry
}

// pathHistChunk is how many paths' histories pathHistOf allocates at once.
const pathHistChunk = 32

// pathHistOf returns path's history, made empty if it has none, cut from
// a chunk (one object per chunk rather than per path: a chunk lives
// while one of its histories is referred to; none is ever used twice).
// Lock held.
func (s *Server) pathHistOf(path string) *pathHist {
	ph := s.hists[path]
	if ph == nil {
		ph = s.spareHists.New(pathHistChunk)
		s.hists[path] = ph
	}
	return ph
}

// histOf returns path's prior versions (nil if none is kept). Lock held.
func (s *Server) histOf(path string) []histEntry {
	if ph := s.hists[path]; ph != nil {
		return ph.hist
	}
	return nil
}

// evMask is the set of watch events a transaction fired on a node, and
// whether it changed the node's ACL (which fires none).
type evMask uint8

const (
	evCreated evMask = 1 << iota
	evDeleted
	evData
	evChildren
	evACL
)

func maskOf(typ task.EventType) evMask {
	switch typ {
	case task.EventNodeCreated:
		return evCreated
	case task.EventNodeDeleted:
		return evDeleted
	case task.EventNodeDataChanged:
		return evData
	case task.EventNodeChildrenChanged:
		return evChildren
	}
	return 0
}

// prior records, in tx, what path is before tx changes it (n nil: it does
// not exist), once per transaction, while a Conn lags. Lock held.
func (s *Server) prior(tx *txn, path string, n *node) {
	if s.lagN == 0 && !s.keepHist {
		return
	}
	for _, h := range tx.priors {
		if h.path == path && h.kid == "" {
			return
		}
	}
	var p *snap
	if n != nil {
		p = s.newSnap()
		*p = snap{data: n.data, acl: n.acl, stat: n.clientStat()}
	}
	tx.priors = append(tx.priors, txPrior{path: path, prior: p})
}

// histChunk is how many entries newHist allocates at once, histFirst
// the room of a path's first history it hands out.
const histChunk, histFirst = 64, 2

// newHist returns an empty history with room for histFirst entries, cut
// from a chunk (one object per chunk rather than per path: a path with
// more entries grows into its own). Lock held.
func (s *Server) newHist() []histEntry {
	return s.spareHist.Cut(histFirst, histChunk)[:0]
}

// snapChunk is how many snaps newSnap allocates at once.
const snapChunk = 32

// newSnap returns a new zero snap, cut from a chunk of snapChunk (one
// object per chunk rather than per prior version: a chunk lives while
// the history holds one of its snaps). Lock held.
func (s *Server) newSnap() *snap {
	return s.snaps.New(snapChunk)
}

// kid records, in tx, that it adds (or removes) name under parent, while
// a Conn lags or the history is kept. Lock held.
func (s *Server) kid(tx *txn, parent, name string, added bool) {
	if s.lagN == 0 && !s.keepHist {
		return
	}
	tx.priors = append(tx.priors, txPrior{path: parent, kid: name, added: added})
}

// txPrior is one prior version, or one change of children (kid set), a
// transaction recorded.
type txPrior struct {
	path  string
	prior *snap
	kid   string
	added bool
	evs   evMask // evACL: the transaction set the node's ACL
}

// priorACL records what path is before tx sets its ACL. Lock held.
func (s *Server) priorACL(tx *txn, path string, n *node) {
	s.prior(tx, path, n)
	for i := range tx.priors {
		if tx.priors[i].path == path && tx.priors[i].kid == "" {
			tx.priors[i].evs |= evACL
		}
	}
}

// keepPriors files a committed transaction's prior versions. Lock held.
func (s *Server) keepPriors(tx *txn) {
	if s.lagN == 0 && !s.keepHist {
		return
	}
	if s.hists == nil {
		s.hists = map[string]*pathHist{}
	}
	for _, p := range tx.priors {
		ph := s.pathHistOf(p.path)
		if p.kid != "" {
			ph.kids = append(ph.kids, kidEntry{zxid: tx.zxid, name: p.kid, added: p.added})
		} else {
			evs := p.evs
			for _, f := range tx.fires {
				if f.path == p.path {
					evs |= maskOf(f.typ)
				}
			}
			if ph.hist == nil {
				ph.hist = s.newHist()
			}
			ph.hist = append(ph.hist, histEntry{zxid: tx.zxid, prior: p.prior, evs: evs})
		}
		s.histN++
	}
	if s.histN > max(4096, s.trimAt) {
		s.trimHistory()
		// Twice what is left, so that a client that hears nothing (its
		// last zxid holds the history back) costs one trim per doubling,
		// not one per transaction.
		s.trimAt = 2 * s.histN
	}
}

// trimHistory drops the prior versions no lagging view can ask for.
// Lock held.
func (s *Server) trimHistory() {
	low := s.zxid
	for _, c := range s.conns {
		switch {
		case c.lagging:
			low = min(low, c.view)
		case s.keepHist && !c.dead && !c.closed:
			low = min(low, c.seen) // where a Lag of c may start
		}
	}
	s.histFrom = max(s.histFrom, low)
	n := 0
	for path, ph := range s.hists {
		ph.hist = trimBelow(ph.hist, low, func(h histEntry) int64 { return h.zxid })
		ph.kids = trimBelow(ph.kids, low, func(k kidEntry) int64 { return k.zxid })
		if ph.hist == nil && ph.kids == nil {
			delete(s.hists, path)
			continue
		}
		n += len(ph.hist) + len(ph.kids)
	}
	s.histN = n
}

// trimBelow drops, from a path's entries (in zxid order), those of
// transactions at or below low: nil if none is left.
func trimBelow[E any](es []E, low int64, zxid func(E) int64) []E {
	i := 0
	for i < len(es) && zxid(es[i]) <= low {
		i++
	}
	if i == len(es) {
		return nil
	}
	return es[i:]
}

// KeepHistory makes the server keep the prior versions of the nodes every
// transaction changes from now on, so that a Lag can start
// its member as far back as the last zxid its client has heard of,
// rather than at the server's zxid. It costs memory and time on every
// write: the simulation calls it for the seeds that draw lags.
func (s *Server) KeepHistory() {
	s.locked(func() {
		if !s.keepHist {
			s.keepHist = true
			if s.lagN == 0 {
				s.histFrom = s.zxid
			}
		}
	})
}

// Lag makes the member c's session talks to fall behind the leader for d
// of the server's clock (see the model at the top of lag.go): from now
// on, c's reads without a watch (all its reads, with LagWatchedReads)
// miss the transactions it has not caught up with, and with KeepHistory
// also those since the last zxid its client heard of (of a reply or a
// notification). c's own writes, syncs, other requests and notifications
// catch its view up; a session event or the end of d ends the lag. A Conn
// not started yet lags from the start of its first session, for d from
// then (a new process has heard of nothing: its first member may not
// have applied even what the process before it wrote); any other Conn
// that is not connected does not lag.
func (s *Server) Lag(c *Conn, d time.Duration) { s.lag(c, d, false) }

// LagAtReconnect has c's next reconnect on its session reach a member
// that lags for d from then: ZooKeeper lets a session come back through
// any member that has applied the last zxid its client saw, so a write
// applied as c was cut off, its reply lost, is not in that member's
// view until it catches up (as Lag's views do). With held, the view does
// not drift (LagHeld). A reconnect on a new session (the old one expired)
// drops it. Nothing if c is closed.
func (s *Server) LagAtReconnect(c *Conn, d time.Duration, held bool) {
	s.locked(func() {
		if !c.closed && !c.dead {
			c.reconnectLag, c.reconnectHeld = d, held
		}
	})
}

// LagAtNewSession has c's next new session (its session expired, and the
// client opens another) start on a member that lags for d from then, its
// view as far back as the history kept (KeepHistory), behind what the
// old session saw. A client presents the last zxid it saw only to come
// back on a session; a new one may reach any member, and with local
// sessions (localSessionsEnabled) its creation is no transaction the
// member must apply first, as for a restarted process's first session
// (Lag before Start). With held, the view does not drift (LagHeld).
// Nothing if c is closed.
func (s *Server) LagAtNewSession(c *Conn, d time.Duration, held bool) {
	s.locked(func() {
		if !c.closed && !c.dead {
			c.newSessionLag, c.newSessionHeld = d, held
		}
	})
}

// LagHeld is Lag without the drift: the member's view moves only with
// what catches a view up (the session's own writes and syncs, other
// requests, notifications) and at the end of d, never part of the way at
// random. For a directed test that needs a read answered from the view
// however the scheduler runs (a sync's removal caught on any schedule).
// Lag of the same c ends the hold.
func (s *Server) LagHeld(c *Conn, d time.Duration) { s.lag(c, d, true) }

func (s *Server) lag(c *Conn, d time.Duration, held bool) {
	if c == nil {
		return
	}
	s.locked(func() {
		switch {
		case c.closed || c.dead:
		case !c.started:
			c.pendingLag, c.lagHeld = d, held
		case c.connected:
			c.lagHeld = held
			s.startLag(c, d)
		}
	})
}

// startLag is Lag of a connected c. Lock held.
func (s *Server) startLag(c *Conn, d time.Duration) {
	if !c.lagging {
		if s.lagN == 0 && !s.keepHist {
			s.histFrom = s.zxid
		}
		c.lagging = true
		c.view = max(c.seen, s.histFrom)
		s.lagN++
	}
	if s.trace.on {
		s.tracef("fault lag c%d for %s view=%d zxid=%d", c.num, d, c.view, s.zxid)
	}
	if c.lagEnd != nil {
		c.lagEnd.Stop()
	}
	c.lagEnd = s.afterFunc(d, func() {
		c.lagEnd = nil
		s.endLag(c, "over")
	})
}

// LagWatchedReads says whether a lagging member answers reads with a
// watch from its view too (the watch fired as the member applies a
// change after the view), or catches up before it answers them (the
// default). Both are answers a real ensemble can give; the first is the
// harsher.
func (s *Server) LagWatchedReads(on bool) {
	s.locked(func() { s.lagWatched = on })
}

// Lagging reports whether c's member lags behind the leader (Lag) and, if
// so, the last zxid it has applied.
func (c *Conn) Lagging() (bool, int64) {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	return c.lagging, c.view
}

// StaleReads returns how many reads lagging members have answered with
// data a later transaction had changed (Lag).
func (s *Server) StaleReads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.staleN
}

// endLag ends c's lag. Lock held.
func (s *Server) endLag(c *Conn, why string) {
	if !c.lagging {
		return
	}
	if s.trace.on {
		s.tracef("c%d lag ends (%s) view=%d zxid=%d", c.num, why, c.view, s.zxid)
	}
	c.lagging, c.lagHeld = false, false
	c.view = 0
	s.fireDeferred(c) // caught up: what SetWatches held back goes now
	if c.lagEnd != nil {
		c.lagEnd.Stop()
		c.lagEnd = nil
	}
	s.lagN--
	if s.lagN == 0 && !s.keepHist {
		s.hists, s.histN, s.trimAt = nil, 0, 0
	}
}

// EndLags ends every lag: each lagging member catches up with the leader.
func (s *Server) EndLags() {
	s.locked(func() {
		for _, c := range s.conns {
			s.endLag(c, "caught up")
		}
	})
}

// endAllLags ends every lag (the tree is replaced). Lock held.
func (s *Server) endAllLags(why string) {
	for _, c := range s.conns {
		s.endLag(c, why)
		c.seen, c.heard = 0, 0
	}
	s.hists, s.histN, s.histFrom, s.trimAt = nil, 0, 0, 0
}

// catchUp brings a lagging c's view up to the server's zxid, and sends
// the notifications SetWatches held back (fireDeferred). Lock held.
func (c *Conn) catchUp() {
	if c.lagging {
		c.view = c.srv.zxid
		c.srv.fireDeferred(c)
	}
}

// deferredWatch is a notification SetWatches owes a session back through
// a lagging member: w fires with ev once the member has applied the
// transaction at.
type deferredWatch struct {
	w  *watch
	at int64
	ev task.Event
}

// deferWatch holds back the notification SetWatches would send for w,
// of kind, on a session back through a lagging member (LagAtReconnect),
// if the change that fires it is one the member has not applied: the
// member checks the watches against its own tree, and sends the
// notification as it applies the change. A read before then is answered
// from the view, without the change: the lost reply's write stays hidden
// from a plain read until a sync or a write catches the member up. The
// watch stays set. A change between the client's last zxid and the view
// is one the member has applied: it fires at once. It reports whether it
// held the notification back. Lock held.
func (s *Server) deferWatch(c *Conn, w *watch, kind watchKind) bool {
	if c.lastZxid < s.histFrom {
		return false // changes since the client's zxid not all kept: at once
	}
	typ, at := s.firstFired(w.path, c.lastZxid, kind)
	if typ == 0 || at <= c.view {
		return false
	}
	c.deferred = append(c.deferred, deferredWatch{w: w, at: at, ev: task.Event{Type: typ, State: task.StateConnected, Path: w.path}})
	if s.trace.on {
		s.tracef("c%d watch %s %s held back to view=%d", c.num, typ, w.path, at)
	}
	return true
}

// fireDeferred sends the notifications SetWatches held back for c once
// its member has applied one of their changes (its view reaches it) or
// has stopped lagging: it catches up the rest of the way (an answer a
// real ensemble can give: the member applies what follows at once) and
// sends them all, in the order of their changes. A watch that fired
// since (a later change fired it) is done already; one whose session is
// off its connection is left set, for the next SetWatches. Lock held.
func (s *Server) fireDeferred(c *Conn) {
	if len(c.deferred) == 0 {
		return
	}
	if c.lagging && !slices.ContainsFunc(c.deferred, func(d deferredWatch) bool { return d.at <= c.view }) {
		return
	}
	due := c.deferred
	c.deferred = nil
	if !c.connected {
		return
	}
	if c.lagging {
		c.view = s.zxid
	}
	slices.SortStableFunc(due, func(a, b deferredWatch) int { return cmp.Compare(a.at, b.at) })
	for _, d := range due {
		w := d.w
		if w.done || w.sess.conn != c || c.sess != w.sess {
			continue
		}
		// Fired, it stays in its watch table until fireTable drops it:
		// this may run inside fireTable's loop (a notification that
		// catches the member up), whose list must not change under it.
		s.notify(w, d.ev)
	}
}

// seenZxid is the zxid c's member has applied: its view if it lags.
func (c *Conn) seenZxid() int64 {
	if c.lagging {
		return c.view
	}
	return c.srv.zxid
}

// drift catches one lagging view up part of the way, drawn from the
// seed (Step, deterministic mode). Lock held.
func (s *Server) drift() {
	behind := 0
	for _, c := range s.conns {
		if c.lagging && !c.lagHeld && c.view < s.zxid {
			behind++
		}
	}
	if behind == 0 {
		return
	}
	k := s.rng.IntN(behind)
	for _, c := range s.conns {
		if !c.lagging || c.lagHeld || c.view >= s.zxid {
			continue
		}
		if k > 0 {
			k--
			continue
		}
		c.view += 1 + s.rng.Int64N(s.zxid-c.view)
		if s.trace.on {
			s.tracef("c%d lag drifts to view=%d zxid=%d", c.num, c.view, s.zxid)
		}
		s.fireDeferred(c)
		return
	}
}

// staleAt returns what path was at zxid v: ok false if no transaction
// after v changed it (the live tree answers), else its prior version
// (nil: it did not exist). Lock held.
func (s *Server) staleAt(path string, v int64) (*snap, bool) {
	for _, h := range s.histOf(path) {
		if h.zxid > v {
			return h.prior, true
		}
	}
	return nil, false
}

// serveStale answers a lagging c's read (exists, getData, getChildren)
// from its view, if a transaction after the view changed the node, and
// reports whether it did; otherwise the live tree answers (the same as
// the view's, for that node). A watch the read asks for is set as the
// member would set it: if a transaction after the view would fire it,
// its notification is held back until the member applies that
// transaction (fireDeferred: a sync, a write, a drift past it, the lag's
// end); otherwise it is set on the server. A read whose node's ACL
// changed after the view, and a watched read of a Conn served over the
// wire, or a read of "", catch the view up instead. Lock held.
func (s *Server) serveStale(c *Conn, p *pending) bool {
	var path string
	var watch bool
	switch r := p.req.(type) {
	case *task.ExistsRequest:
		path, watch = r.Path, r.Watch
	case *task.GetDataRequest:
		path, watch = r.Path, r.Watch
	case *task.GetChildrenRequest:
		path, watch = r.Path, r.Watch
	default:
		return false
	}
	// "" is the root's alias (tree.lookup), which the history does not
	// know by that name.
	if path == "" || watch && (!s.lagWatched || c.remote || s.aclChangedAfter(path, c.view)) {
		c.catchUp()
		return false
	}
	n, changed := s.staleAt(path, c.view)
	if !changed {
		return false
	}
	s.staleN++
	if s.trace.on {
		s.tracef("c%d stale read %s at view=%d zxid=%d", c.num, path, c.view, s.zxid)
	}
	var resp task.Response
	kind, setWatch := kindData, false
	switch p.req.(type) {
	case *task.ExistsRequest:
		setWatch = true
		if n == nil {
			resp.Err, kind = task.ErrNoNode, kindExist
		} else {
			resp.Stat = n.stat
		}
	default: // getData, getChildren
		_, children := p.req.(*task.GetChildrenRequest)
		switch {
		case n == nil:
			resp.Err = task.ErrNoNode
		case !allowed(n.acl, task.PermRead, c.who):
			resp.Err = task.ErrNoAuth
		case children:
			names := s.kidsAt(path, c.view)
			s.rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
			resp.Children, resp.Stat, kind, setWatch = names, n.stat, kindChild, true
		default:
			resp.Data, resp.Stat, setWatch = bytes.Clone(n.data), n.stat, true
		}
	}
	var fire task.EventType
	var at int64
	if watch && setWatch && p.watch != nil {
		fire, at = s.firstFired(path, c.view, kind)
		if fire == 0 {
			s.downgrade(c.sess, path, kind)
			s.addWatch(c.sess, path, kind, p.watch)
			compactWatches(c.sess)
		}
	}
	c.lastZxid = c.view
	s.traceApply(c, p, &resp)
	s.enqueue(c, item{kind: itemResp, id: p.id, done: p.done, zdone: p.zdone, resp: resp})
	if fire != 0 {
		// The member sets the watch and sends its notification as it
		// applies the change (fireDeferred), not with the answer.
		s.downgrade(c.sess, path, kind)
		s.addWatch(c.sess, path, kind, p.watch)
		w := c.sess.watches[len(c.sess.watches)-1]
		compactWatches(c.sess)
		c.deferred = append(c.deferred, deferredWatch{w: w, at: at, ev: task.Event{Type: fire, State: task.StateConnected, Path: path}})
		if s.trace.on {
			s.tracef("c%d stale watch %s %s held back to view=%d", c.num, fire, path, at)
		}
	}
	return true
}

// aclChangedAfter reports whether a transaction after v set path's ACL.
// Lock held.
func (s *Server) aclChangedAfter(path string, v int64) bool {
	for _, h := range s.histOf(path) {
		if h.zxid > v && h.evs&evACL != 0 {
			return true
		}
	}
	return false
}

// firstFired returns the event, and the transaction, of the first change
// after v that fires a watch of kind on path, or 0. Lock held.
func (s *Server) firstFired(path string, v int64, kind watchKind) (task.EventType, int64) {
	for _, h := range s.histOf(path) {
		if h.zxid <= v {
			continue
		}
		switch {
		case h.evs&evDeleted != 0 && kind != kindExist:
			return task.EventNodeDeleted, h.zxid
		case h.evs&evCreated != 0 && kind == kindExist:
			return task.EventNodeCreated, h.zxid
		case h.evs&evData != 0 && kind == kindData:
			return task.EventNodeDataChanged, h.zxid
		case h.evs&evChildren != 0 && kind == kindChild:
			return task.EventNodeChildrenChanged, h.zxid
		}
	}
	return 0, 0
}

// kidsAt returns path's children at zxid v, sorted: the live ones with
// every change after v undone, newest first. Lock held.
func (s *Server) kidsAt(path string, v int64) []string {
	set := map[string]bool{}
	if n := s.tree.nodes[path]; n != nil {
		for _, name := range n.childNames() {
			set[name] = true
		}
	}
	var ks []kidEntry
	if ph := s.hists[path]; ph != nil {
		ks = ph.kids
	}
	for i := len(ks) - 1; i >= 0 && ks[i].zxid > v; i-- {
		if ks[i].added {
			delete(set, ks[i].name)
		} else {
			set[ks[i].name] = true
		}
	}
	names := make([]string, 0, len(set))
	for name := range set {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

package task

import (
	"errors"
	"slices"
	"time"
)

// Watch is a one-time ZooKeeper watch set by ExistsW, GetW or ChildrenW. It
// fires once: with the node event that triggered it, or, if its session
// ends first, with EventNotWatching. A Watch is used on the executor
// goroutine only.
//
// ZooKeeper sends no notification to a session that may not READ the
// node (since the fix of CVE-2024-23944): a watch set while it could,
// whose node an operator's setAcl then closed to it, would never fire.
// So a watch waited on for RecheckAfter (twice the session timeout;
// executor.Config.WatchRecheck sets another period, or none) reads its
// node again with a plain exists (which needs no permission), and again
// each period while it is waited on: if the node changed since the read that set the
// watch, the watch fires with the event the change would have sent
// (NodeDeleted if it is gone or made again, NodeCreated, NodeDataChanged,
// NodeChildrenChanged for a child watch). It never fires for a change it
// would not have fired for, and a notification that was sent comes
// before the re-read's reply, so only a withheld one is made up. What a
// re-read cannot see is not made up: an exists watch on a missing node
// that was created, with an ACL the session does not hold, and deleted
// again before the re-read (the node is missing both times) still waits.
type Watch struct {
	path  string
	ev    Event
	fired bool
	// What the read that set the watch saw, for the re-read (seen).
	known, exists, child bool
	czxid                int64
	zxid                 int64 // Pzxid for a child watch, else Mzxid
	// The waits, in the order they came: first (most watches have one
	// wait at most), then the others.
	first   *watchWaiter
	waiters []*watchWaiter
	// slot is the record of one wait, kept in the Watch: a wait takes it
	// when it is free (most watches are waited on once at a time), so
	// that it allocates no record of its own.
	slot  watchWaiter
	env   *scopeEnv // the runtime's (its scopes'), for the re-reads
	every time.Duration
	timer Timer // the next re-read, while waited on
}

// RecheckAfter is how long a Wait on a watch waits for its notification
// before it reads the watched node again (see Watch): twice the session
// timeout (20 s while the session's timeout is not known).
func RecheckAfter(sessionTimeout time.Duration) time.Duration {
	if sessionTimeout <= 0 {
		return 20 * time.Second
	}
	return 2 * sessionTimeout
}

// watchWaiter is one Wait on a Watch, until the watch fires or the wait is
// abandoned (its scope ended: it leaves the Watch then). One value per
// wait: it is both the wait in its scope (as Suspend's) and what the Watch
// fires.
type watchWaiter struct {
	waitLink // its owner is the scope it waits in
	w        *Watch
	k        Cont[Event]
}

// fired resumes the chain with the event, unless the wait was abandoned
// (its error went to k already) or its scope has ended and the
// abandonment is on its way (a late event, dropped).
func (ww *watchWaiter) fired(ev Event) {
	if ww.owner == nil || ww.owner.err != nil {
		return
	}
	s, k := ww.owner, ww.k // owner: the scope it waits in
	s.removeWait(ww)
	ww.done()
	Resume(s, k, ev, watchErr(ev))
}

func (ww *watchWaiter) abandon(err error) {
	ww.w.leave(ww)
	k := ww.k
	ww.done()
	k(Event{}, err)
}

// done clears a wait that is over (it has left its scope and its
// Watch): the Watch's slot is free again.
func (ww *watchWaiter) done() { *ww = watchWaiter{} }

// Path is the watched path.
func (w *Watch) Path() string { return w.path }

// Fired reports whether the watch has fired, and with what.
func (w *Watch) Fired() (Event, bool) { return w.ev, w.fired }

// Wait returns a task that completes when the watch fires (at once if it
// already has). A node event is its value; EventNotWatching is an error
// wrapping ErrSessionExpired or ErrClosed, EventWatchRemoved one wrapping
// ErrWatchRemoved. Waiting does not consume the event: every Wait sees it.
func (w *Watch) Wait() Task[Event] {
	return func(s *Scope, k Cont[Event]) {
		if w.fired {
			k(w.ev, watchErr(w.ev))
			return
		}
		if s.err != nil {
			k(Event{}, s.err)
			return
		}
		ww := &w.slot
		if ww.w != nil { // taken by another wait
			ww = new(watchWaiter)
		}
		ww.w, ww.k = w, k
		s.addWait(ww)
		if w.known && w.timer == nil {
			w.env, w.every = s.env, s.env.rt.frames().recheck
			if w.every == 0 {
				w.every = RecheckAfter(s.env.session.Timeout)
			}
			if w.every > 0 {
				w.arm()
			}
		}
		if w.first == nil && len(w.waiters) == 0 {
			w.first = ww
			return
		}
		w.waiters = append(w.waiters, ww)
	}
}

// seen records what the read that set the watch saw (st nil: no node),
// for the re-read; child: a child watch.
func (w *Watch) seen(st *Stat, child bool) {
	w.known, w.child = true, child
	if st != nil {
		w.exists, w.czxid, w.zxid = true, st.Czxid, st.Mzxid
		if child {
			w.zxid = st.Pzxid
		}
	}
}

func (w *Watch) arm() {
	rt := w.env.rt
	at := rt.Clock().Now().Add(w.every)
	if b, ok := rt.(interface {
		AfterFuncBackground(time.Time, func()) Timer
	}); ok {
		w.timer = b.AfterFuncBackground(at, w.reread) // keeps no fake clock going
		return
	}
	w.timer = rt.AfterFunc(at, w.reread)
}

// reread reads the node again (see Watch) while the watch is waited on.
func (w *Watch) reread() {
	w.timer = nil
	if w.fired || (w.first == nil && len(w.waiters) == 0) {
		return
	}
	w.env.rt.Send(&ExistsRequest{Path: w.path}, rereadReceiver{w}, nil)
}

// rereadReceiver takes the re-read's reply.
type rereadReceiver struct{ w *Watch }

func (r rereadReceiver) Receive(resp Response) {
	w := r.w
	if w.fired {
		return
	}
	var typ EventType
	switch missing := resp.Err != nil && errors.Is(resp.Err, ErrNoNode); {
	case resp.Err != nil && !missing:
		// Not sent, connection loss: read again later.
	case !w.exists && !missing:
		typ = EventNodeCreated
	case !w.exists:
	case missing || resp.Stat.Czxid != w.czxid:
		typ = EventNodeDeleted
	case w.child && resp.Stat.Pzxid != w.zxid:
		// The zxid of the last child created or deleted (not Cversion,
		// which a counter set by hand moves without any child change).
		typ = EventNodeChildrenChanged
	case !w.child && resp.Stat.Mzxid != w.zxid:
		typ = EventNodeDataChanged
	}
	if typ != 0 {
		w.fire(Event{Type: typ, State: StateConnected, Path: w.path})
		return
	}
	if w.timer == nil && (w.first != nil || len(w.waiters) > 0) {
		w.arm()
	}
}

func (w *Watch) fire(ev Event) {
	if w.fired {
		return
	}
	w.fired, w.ev = true, ev
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	first, ws := w.first, w.waiters
	w.first, w.waiters = nil, nil
	if first != nil {
		first.fired(ev)
	}
	for _, ww := range ws {
		ww.fired(ev)
	}
}

// leave takes an abandoned wait off the watch.
func (w *Watch) leave(ww *watchWaiter) {
	if w.first == ww {
		w.first = nil
	} else if i := slices.Index(w.waiters, ww); i >= 0 {
		w.waiters = slices.Delete(w.waiters, i, i+1) // clears the freed slot
	}
	if w.timer != nil && w.first == nil && len(w.waiters) == 0 {
		w.timer.Stop()
		w.timer = nil
	}
}

func watchErr(ev Event) error {
	if ev.Type == EventWatchRemoved {
		return &OpError{Op: "watch", Path: ev.Path, Err: ErrWatchRemoved}
	}
	if ev.Type != EventNotWatching {
		return nil
	}
	err := ErrSessionExpired
	if ev.State == StateClosed {
		err = ErrClosed
	}
	return &OpError{Op: "watch", Path: ev.Path, Err: err}
}

// StatWatch is the outcome of ExistsW: the Stat (nil if the node does not
// exist) and the watch, which fires on creation, deletion or data change.
type StatWatch struct {
	Stat  *Stat
	Watch *Watch
}

// DataWatch is the outcome of GetW: the data and a watch that fires on
// deletion or data change.
type DataWatch struct {
	Data
	Watch *Watch
}

// ChildrenWatch is the outcome of ChildrenW: the children and a watch that
// fires when a child is created or deleted, or the node is deleted.
type ChildrenWatch struct {
	ChildList
	Watch *Watch
}

// A watched request (ExistsW, GetW, ChildrenW) sends its request from a
// watchSend; k, the Cont of ExistsW, GetW or ChildrenW, receives the
// outcome and the Watch (deliver). One value holds the request, the Watch
// and the request's wait (as send's sendWait) and is its Watcher, so a
// watched request allocates that value and no callback: dataWatchSend,
// childWatchSend or existsWatchSend, made for each run of the task.

// send sends ws's request, ws waiting for its outcome in ws.s.
func (ws *watchSend) send() {
	s, req := ws.s, ws.req
	if s.err != nil {
		ws.deliver(Response{}, s.err)
		return
	}
	s.addWait(ws)
	s.env.rt.Send(req, ws, ws)
}

// watchSend is a watched request: its Watch, its wait in the scope, its
// Receiver (as sendWait is for a plain request) and its Watcher. It is
// not reused, as a sendWait is: the Watch is the caller's.
type watchSend struct {
	waitLink
	s   *Scope
	req Request
	k   any // a Cont[StatWatch], Cont[DataWatch] or Cont[ChildrenWatch]
	w   Watch
	// stat, for an exists (ExistsW), is where the Stat it hands over is
	// kept: in the existsWatchSend that holds ws.
	stat *Stat
}

// existsWatchSend is an ExistsW's watchSend with its request, and the
// room for the Stat it hands over (a pointer, which would be an
// allocation of its own): one value for all, as each run sends once and
// delivers once.
type existsWatchSend struct {
	watchSend
	r  ExistsRequest
	st Stat
}

// dataWatchSend is a GetW's watchSend with its request.
type dataWatchSend struct {
	watchSend
	r GetDataRequest
}

// childWatchSend is a ChildrenW's watchSend with its request.
type childWatchSend struct {
	watchSend
	r GetChildrenRequest
}

// deliver hands k the outcome with the Watch, as its operation makes
// them: an exists sets a watch on a missing node too, a get or a
// children fails with ErrNoNode and sets none.
func (ws *watchSend) deliver(r Response, err error) {
	w := &ws.w
	switch k := ws.k.(type) {
	case Cont[StatWatch]:
		var st *Stat // existsResult's, kept in ws.stat
		if err != nil {
			if !isNoNode(err) {
				k(StatWatch{}, err)
				return
			}
		} else {
			st = ws.stat
			if st == nil {
				st = new(Stat)
			}
			*st = r.Stat
		}
		w.seen(st, false)
		k(StatWatch{Stat: st, Watch: w}, nil)
	case Cont[DataWatch]:
		if err != nil {
			k(DataWatch{}, err)
			return
		}
		w.seen(&r.Stat, false)
		k(DataWatch{Data: Data{r.Data, r.Stat}, Watch: w}, nil)
	case Cont[ChildrenWatch]:
		if err != nil {
			k(ChildrenWatch{}, err)
			return
		}
		w.seen(&r.Stat, true)
		k(ChildrenWatch{ChildList: ChildList{r.Children, r.Stat}, Watch: w}, nil)
	}
}

// Receive is sendWait.Receive: the chain resumes (through Resume's
// trampoline) with the outcome and the watch.
func (ws *watchSend) Receive(r Response) {
	if ws.owner == nil || ws.owner.err != nil {
		return
	}
	ws.owner.removeWait(ws)
	err := wrapResponseErr(ws.req, r)
	if d := ws.s.depth; *d < maxDepth {
		*d++
		ws.deliver(r, err)
		*d--
		return
	}
	// Copies, as Resume makes: only this path moves them to the heap.
	r2, err2 := r, err
	ws.s.env.rt.Schedule(func() { ws.deliver(r2, err2) })
}

// Notify fires the watch (Watcher).
func (ws *watchSend) Notify(ev Event) { ws.w.fire(ev) }

// abandon is sendWait.abandon.
func (ws *watchSend) abandon(err error) {
	if err == ErrDeadlineExceeded {
		err = &OpError{Op: ws.req.OpName(), Path: ws.req.NodePath(), Err: err}
	}
	ws.deliver(Response{}, err)
}

// ExistsW is Exists that also sets a data watch, on a missing node too (it
// then fires on the node's creation).
func ExistsW(path string) Task[StatWatch] {
	return func(s *Scope, k Cont[StatWatch]) {
		e := &existsWatchSend{watchSend: watchSend{s: s, k: k, w: Watch{path: path}}}
		e.r = ExistsRequest{Path: path, Watch: true}
		e.req, e.stat = &e.r, &e.st
		e.send()
	}
}

// GetW is Get that also sets a data watch. On a missing node it fails with
// ErrNoNode and sets no watch.
func GetW(path string) Task[DataWatch] {
	return func(s *Scope, k Cont[DataWatch]) {
		d := &dataWatchSend{watchSend: watchSend{s: s, k: k, w: Watch{path: path}}}
		d.r = GetDataRequest{Path: path, Watch: true}
		d.req = &d.r
		d.send()
	}
}

// ChildrenW is Children that also sets a child watch. On a missing node it
// fails with ErrNoNode and sets no watch.
func ChildrenW(path string) Task[ChildrenWatch] {
	return func(s *Scope, k Cont[ChildrenWatch]) {
		c := &childWatchSend{watchSend: watchSend{s: s, k: k, w: Watch{path: path}}}
		c.r = GetChildrenRequest{Path: path, Watch: true}
		c.req = &c.r
		c.send()
	}
}

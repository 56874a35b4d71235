package task

import "slices"

// Watch is a one-time ZooKeeper watch set by ExistsW, GetW or ChildrenW. It
// fires once: with the node event that triggered it, or, if its session
// ends first, with EventNotWatching. A Watch is used on the executor
// goroutine only.
type Watch struct {
	path  string
	fired bool
	ev    Event
	// The waits, in the order they came: first (most watches have one
	// wait at most), then the others.
	first   *watchWaiter
	waiters []*watchWaiter
}

// watchWaiter is one Wait on a Watch, until the watch fires or the wait is
// abandoned (its scope ended: it leaves the Watch then). One value per
// wait: it is both the wait in its scope (as Suspend's) and what the Watch
// fires.
type watchWaiter struct {
	waitLink
	w *Watch
	s *Scope
	k Cont[Event]
}

// fired resumes the chain with the event, unless the wait was abandoned
// (its error went to k already) or its scope has ended and the
// abandonment is on its way (a late event, dropped).
func (ww *watchWaiter) fired(ev Event) {
	if ww.owner == nil || ww.owner.err != nil {
		return
	}
	ww.owner.removeWait(ww)
	Resume(ww.s, ww.k, ev, watchErr(ev))
}

func (ww *watchWaiter) abandon(err error) {
	ww.w.leave(ww)
	ww.k(Event{}, err)
}

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
		ww := &watchWaiter{w: w, s: s, k: k}
		s.addWait(ww)
		if w.first == nil && len(w.waiters) == 0 {
			w.first = ww
			return
		}
		w.waiters = append(w.waiters, ww)
	}
}

func (w *Watch) fire(ev Event) {
	if w.fired {
		return
	}
	w.fired, w.ev = true, ev
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
		return
	}
	if i := slices.Index(w.waiters, ww); i >= 0 {
		w.waiters = slices.Delete(w.waiters, i, i+1) // clears the freed slot
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

// sendWatch sends a request that sets a watch; k receives the outcome
// and the Watch. One value holds the Watch and the request's wait (as
// send's sendWait) and is its Watcher, so a watched request allocates
// that value and no callback.
func sendWatch(s *Scope, req Request, path string, k func(Response, *Watch, error)) {
	ws := &watchSend{s: s, req: req, k: k, w: Watch{path: path}}
	if s.err != nil {
		k(Response{}, &ws.w, s.err)
		return
	}
	s.addWait(ws)
	s.rt.Send(req, ws, ws)
}

// watchSend is a watched request: its Watch, its wait in the scope, its
// Receiver (as sendWait is for a plain request) and its Watcher. It is
// not reused, as a sendWait is: the Watch is the caller's.
type watchSend struct {
	waitLink
	s   *Scope
	req Request
	k   func(Response, *Watch, error)
	w   Watch
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
		ws.k(r, &ws.w, err)
		*d--
		return
	}
	// Copies, as Resume makes: only this path moves them to the heap.
	r2, err2 := r, err
	ws.s.rt.Schedule(func() { ws.k(r2, &ws.w, err2) })
}

// Notify fires the watch (Watcher).
func (ws *watchSend) Notify(ev Event) { ws.w.fire(ev) }

// abandon is sendWait.abandon.
func (ws *watchSend) abandon(err error) {
	if err == ErrDeadlineExceeded {
		err = &OpError{Op: ws.req.OpName(), Path: ws.req.NodePath(), Err: err}
	}
	ws.k(Response{}, &ws.w, err)
}

// ExistsW is Exists that also sets a data watch, on a missing node too (it
// then fires on the node's creation).
func ExistsW(path string) Task[StatWatch] {
	req := &ExistsRequest{Path: path, Watch: true} // one per task, as request's
	return func(s *Scope, k Cont[StatWatch]) {
		sendWatch(s, req, path, func(r Response, w *Watch, err error) {
			st, err := existsResult(r, err)
			if err != nil {
				k(StatWatch{}, err)
				return
			}
			k(StatWatch{Stat: st, Watch: w}, nil)
		})
	}
}

// GetW is Get that also sets a data watch. On a missing node it fails with
// ErrNoNode and sets no watch.
func GetW(path string) Task[DataWatch] {
	req := &GetDataRequest{Path: path, Watch: true} // one per task, as request's
	return func(s *Scope, k Cont[DataWatch]) {
		sendWatch(s, req, path, func(r Response, w *Watch, err error) {
			if err != nil {
				k(DataWatch{}, err)
				return
			}
			k(DataWatch{Data: Data{r.Data, r.Stat}, Watch: w}, nil)
		})
	}
}

// ChildrenW is Children that also sets a child watch. On a missing node it
// fails with ErrNoNode and sets no watch.
func ChildrenW(path string) Task[ChildrenWatch] {
	req := &GetChildrenRequest{Path: path, Watch: true} // one per task, as request's
	return func(s *Scope, k Cont[ChildrenWatch]) {
		sendWatch(s, req, path, func(r Response, w *Watch, err error) {
			if err != nil {
				k(ChildrenWatch{}, err)
				return
			}
			k(ChildrenWatch{ChildList: ChildList{r.Children, r.Stat}, Watch: w}, nil)
		})
	}
}

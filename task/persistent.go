package task

import "fmt"

// Persistent watches (ZooKeeper 3.6+: addWatch, opcode 106). Unlike the
// one-time watches of ExistsW, GetW and ChildrenW, a persistent watch is not
// used up when it fires: it reports every change it covers until it is
// removed (RemoveWatches) or its session ends.
//
// # What a persistent watch reports
//
//   - WatchPersistent on a path: NodeCreated, NodeDataChanged and
//     NodeDeleted of that node and NodeChildrenChanged of its children.
//     The node need not exist.
//   - WatchPersistentRecursive on a path: NodeCreated, NodeDataChanged and
//     NodeDeleted of that node and of every node below it, with the path of
//     the node that changed; never NodeChildrenChanged (a child's creation
//     or deletion is reported as the child's own event).
//
// # Order and delivery
//
// The watch's events reach PersistentWatch.Next in the order the session
// saw them: zxid order, after the AddWatch reply (a change applied after
// the watch was set is reported; one before it is not), a notification
// before the reply of the write of this session that caused it. Events
// are kept for the reader without bound and without loss: a reader that
// stops reading holds the memory of every event after.
//
// # Reconnects and expiry
//
// A persistent watch lives on the server with its session: across a
// reconnect of the same session the connection sets it again (SetWatches2),
// and it goes on firing. ZooKeeper 3.8 sends no catch-up event for a
// persistent watch when it is set again (DataTree.setWatches re-adds
// persistent and recursive watches without comparing zxids, unlike one-time
// watches): every change made while the session was disconnected is
// missed, silently. So the stream also carries the session's transitions
// (as ZooKeeper's Java client hands them to every watcher): an Event with
// Type EventNone and State StateSuspended when the connection drops, and
// State StateConnected when the same session is usable again. A reader
// that keeps state from the events must re-read what it watches after a
// StateConnected event: the connection sets the watch again before any
// request made after that event, so every change after the re-read's
// reply is reported, and every change before it is in what it read. When the session ends (expired, closed) the
// stream ends with ErrSessionExpired or ErrClosed: the new session has no
// watch.
//
// One-time and persistent watches on the same path of the same session
// interfere on a 3.8 server: the server keeps one registration per
// session, path and list (data, child), so a one-time watch set on the
// path of a persistent one (ExistsW or GetW: the data list; ChildrenW: the
// child list) replaces the persistent registration in that list; after
// the one-time watch fires, the persistent watch receives no more of that
// list's events until a reconnect sets it again. For a recursive watch,
// a one-time data watch on its root path takes the whole recursive
// registration off the server at once. Set no one-time watch on the root
// path of a persistent watch on the same session (ZOOKEEPER-4466; 3.9
// keeps them apart). Likewise a 3.8.0 server registers a recursive watch in
// the child list too: a persistent and a recursive watch of one session on
// one path leave the persistent one without child events.

// AddWatchMode is the kind of persistent watch, numbered as ZooKeeper's
// AddWatchMode numbers it on the wire.
type AddWatchMode int32

// The persistent watch modes.
const (
	WatchPersistent          AddWatchMode = 0
	WatchPersistentRecursive AddWatchMode = 1
)

func (m AddWatchMode) String() string {
	switch m {
	case WatchPersistent:
		return "persistent"
	case WatchPersistentRecursive:
		return "persistent-recursive"
	}
	return fmt.Sprintf("AddWatchMode(%d)", int32(m))
}

// WatcherType says which of a session's watches on a path RemoveWatches
// removes, numbered as ZooKeeper 3.8 numbers it on the wire. 3.8 has no
// type for persistent watches (3.9 added Persistent and
// PersistentRecursive): WatcherAny is the one that removes them.
type WatcherType int32

// The watcher types.
const (
	// WatcherChildren: the one-time child watches (ChildrenW).
	WatcherChildren WatcherType = 1
	// WatcherData: the one-time data and exist watches (GetW, ExistsW).
	// On a 3.8 server it also takes a persistent watch on the path out of
	// the data list (the persistent watch then sees only child events).
	WatcherData WatcherType = 2
	// WatcherAny: every watch of the session on the path, persistent and
	// recursive ones included.
	WatcherAny WatcherType = 3
)

func (t WatcherType) String() string {
	switch t {
	case WatcherChildren:
		return "children"
	case WatcherData:
		return "data"
	case WatcherAny:
		return "any"
	}
	return fmt.Sprintf("WatcherType(%d)", int32(t))
}

// EventWatchRemoved ends a watch that RemoveWatches took away. It is made
// by the client (as the Java client's DataWatchRemoved, ChildWatchRemoved
// and PersistentWatchRemoved), never sent by a server.
const EventWatchRemoved EventType = -3

// ErrWatchRemoved is the error of a wait on a watch that RemoveWatches
// took away.
var ErrWatchRemoved error = ClientError("watch removed")

// AddWatchRequest sets a persistent watch of Mode on Path (which need not
// exist). The watch callback Conn.Do takes is called for every event of
// the watch, for StateSuspended and StateConnected (same session) as
// EventNone events, and last exactly once with EventNotWatching (session
// ended) or EventWatchRemoved; nothing follows that last call. It is
// called only if the request succeeded.
type AddWatchRequest struct {
	Path string
	Mode AddWatchMode
}

// RemoveWatchesRequest removes the session's watches of Type on Path, on
// the server and in the client: each removed watch is called once more
// with EventWatchRemoved, before the reply. It fails with CodeNoWatcher
// when the server holds no such watch (the client's own watches of Type
// on Path, if any, are removed all the same: the server would never fire
// them).
type RemoveWatchesRequest struct {
	Path string
	Type WatcherType
}

func (*AddWatchRequest) OpName() string      { return "addWatch" }
func (*RemoveWatchesRequest) OpName() string { return "removeWatches" }

func (r *AddWatchRequest) NodePath() string {
	if r == nil {
		return ""
	}
	return r.Path
}

func (r *RemoveWatchesRequest) NodePath() string {
	if r == nil {
		return ""
	}
	return r.Path
}

func (*AddWatchRequest) isRequest()      {}
func (*RemoveWatchesRequest) isRequest() {}

// PersistentWatch is a watch set by AddWatch: a stream of events read with
// Next, which ends when the watch is removed or its session ends. It is
// used on the executor goroutine only.
type PersistentWatch struct {
	path   string
	mode   AddWatchMode
	queue  []Event
	head   int
	end    error // set once the last event has been queued
	waiter *streamWaiter
}

// Path is the watched path.
func (w *PersistentWatch) Path() string { return w.path }

// Mode is the watch's mode.
func (w *PersistentWatch) Mode() AddWatchMode { return w.mode }

// Pending is the number of events queued and not yet read.
func (w *PersistentWatch) Pending() int { return len(w.queue) - w.head }

// Next returns a task that takes the watch's next event, waiting for one
// if none is queued. Node events and session transitions (Type EventNone,
// State StateSuspended or StateConnected) are values; once the stream has
// ended, Next fails with an error wrapping ErrWatchRemoved,
// ErrSessionExpired or ErrClosed, every time. A Next abandoned by its
// scope takes no event. One Next at a time: a second while one waits
// fails with ErrInvalidArgument.
func (w *PersistentWatch) Next() Task[Event] {
	return func(s *Scope, k Cont[Event]) {
		if ev, ok := w.take(); ok {
			k(ev, nil)
			return
		}
		if w.end != nil {
			k(Event{}, w.end)
			return
		}
		if w.waiter != nil {
			k(Event{}, &OpError{Op: "watch", Path: w.path, Err: ErrInvalidArgument})
			return
		}
		Suspend(s, k, func(resume Cont[Event]) func() {
			ww := &streamWaiter{}
			ww.fn = func(Event) {
				w.waiter = nil
				if ev, ok := w.take(); ok {
					resume(ev, nil)
					return
				}
				resume(Event{}, w.end)
			}
			w.waiter = ww
			return func() {
				if w.waiter == ww {
					w.waiter = nil
				}
			}
		})
	}
}

func (w *PersistentWatch) take() (Event, bool) {
	if w.head == len(w.queue) {
		return Event{}, false
	}
	ev := w.queue[w.head]
	w.queue[w.head] = Event{}
	w.head++
	if w.head == len(w.queue) {
		w.queue, w.head = w.queue[:0], 0
	}
	return ev, true
}

// deliver takes one call of the Conn's watch callback.
func (w *PersistentWatch) deliver(ev Event) {
	if w.end != nil {
		return
	}
	switch ev.Type {
	case EventNotWatching:
		w.end = watchErr(Event{Type: EventNotWatching, State: ev.State, Path: w.path})
	case EventWatchRemoved:
		w.end = &OpError{Op: "watch", Path: w.path, Err: ErrWatchRemoved}
	default:
		w.queue = append(w.queue, ev)
	}
	if ww := w.waiter; ww != nil {
		ww.fn(ev)
	}
}

// AddWatch sets a persistent watch of mode on path (which need not exist)
// and succeeds with its event stream. See the comment at the top of this
// file for what each mode reports and what a reconnect does.
func AddWatch(path string, mode AddWatchMode) Task[*PersistentWatch] {
	return func(s *Scope, k Cont[*PersistentWatch]) {
		w := &PersistentWatch{path: path, mode: mode}
		send(s, &AddWatchRequest{Path: path, Mode: mode}, watcherFunc(w.deliver), func(_ Response, err error) {
			if err != nil {
				k(nil, err)
				return
			}
			k(w, nil)
		})
	}
}

// RemoveWatches removes the session's watches of typ on path; each ends
// (a PersistentWatch's Next with ErrWatchRemoved, a Watch's Wait with
// ErrWatchRemoved). It fails with an error wrapping CodeNoWatcher when the
// server holds none.
func RemoveWatches(path string, typ WatcherType) Task[Unit] {
	return opTask(&RemoveWatchesRequest{Path: path, Type: typ}, func(Response) Unit { return Unit{} })
}

// streamWaiter is the one Next waiting on a PersistentWatch: fn takes the
// next delivery (executor goroutine).
type streamWaiter struct{ fn func(Event) }

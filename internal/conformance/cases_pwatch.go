package conformance

import (
	"fmt"
	"strings"

	"github.com/zkflow/zkflow/task"
)

// Persistent and persistent-recursive watches (addWatch, 3.6+) and
// removeWatches, as a 3.8 server keeps them.

func addW(c *Client, p string, m task.AddWatchMode) (task.Response, *Watch) {
	return c.DoW(&task.AddWatchRequest{Path: p, Mode: m})
}

func removeW(c *Client, p string, t task.WatcherType) task.Response {
	return c.Do(&task.RemoveWatchesRequest{Path: p, Type: t})
}

// nodeEvents is w's node events (session transitions left out) as
// "Type rel" strings, paths relative to the case's base.
func (e *Env) nodeEvents(w *Watch) string {
	var out []string
	for _, ev := range w.Events() {
		if ev.Type == task.EventNone {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s", ev.Type, strings.TrimPrefix(ev.Path, e.Base+"/")))
	}
	return strings.Join(out, ", ")
}

// wantEvents checks, after a barrier, w's node events.
func (e *Env) wantEvents(c *Client, w *Watch, want, what string) {
	e.T.Helper()
	c.Barrier()
	if got := e.nodeEvents(w); got != want {
		e.T.Errorf("%s: events\n got: %s\nwant: %s", what, got, want)
	}
}

func pwatchCases() []Case {
	const (
		persistent = task.WatchPersistent
		recursive  = task.WatchPersistentRecursive
	)
	return []Case{
		{"pwatch/oneshot-child-then-recursive", "a one-time child watch set before a recursive addWatch of the same session on the same path: 3.8's addWatch makes the session's child-list registration on that path PERSISTENT_RECURSIVE, which is sent no NodeChildrenChanged, so the one-time child watch does not fire with a child's creation, only with the node's deletion", func(e *Env) {
			e.Mk("p")
			_, child := e.C.DoW(&task.GetChildrenRequest{Path: e.P("p"), Watch: true})
			_, rec := e.C.DoW(&task.AddWatchRequest{Path: e.P("p"), Mode: task.WatchPersistentRecursive})
			e.Mk("p/c")
			e.NoEvents(e.C, child, "one-time child watch after a child's creation")
			rec.Wait()
			e.Delete(e.P("p/c"))
			e.Delete(e.P("p"))
			e.OneEvent(e.C, child, task.EventNodeDeleted, e.P("p"))
		}},
		{"pwatch/oneshot-child-then-persistent", "a one-time child watch set before a persistent (not recursive) addWatch of the same session on the same path fires with the next child change, as the persistent registration is sent NodeChildrenChanged", func(e *Env) {
			e.Mk("p")
			_, child := e.C.DoW(&task.GetChildrenRequest{Path: e.P("p"), Watch: true})
			e.C.DoW(&task.AddWatchRequest{Path: e.P("p"), Mode: task.WatchPersistent})
			e.Mk("p/c")
			e.OneEvent(e.C, child, task.EventNodeChildrenChanged, e.P("p"))
		}},
		{"pwatch/persistent-events", "a persistent watch, set on a missing node, reports its creation, data changes, child changes and deletion, every time, and stays", func(e *Env) {
			r, w := addW(e.C, e.P("a"), persistent)
			e.Err(r.Err, nil, "addWatch")
			o := e.NewClient()
			wCreate("a")(e, o)
			wSet("a")(e, o)
			wCreate("a/c")(e, o)
			wCreate("a/c/d")(e, o) // a grandchild: not this watch's business
			wSet("a/c")(e, o)      // nor a child's data
			wDelete("a/c/d")(e, o)
			wDelete("a/c")(e, o)
			wDelete("a")(e, o)
			wCreate("a")(e, o)
			e.wantEvents(e.C, w, "NodeCreated a, NodeDataChanged a, NodeChildrenChanged a, NodeChildrenChanged a, NodeDeleted a, NodeCreated a", "persistent")
		}},
		{"pwatch/recursive-events", "a recursive watch reports creation, data change and deletion of its node and every node below it, with that node's path, and no child events", func(e *Env) {
			r, w := addW(e.C, e.P("a"), recursive)
			e.Err(r.Err, nil, "addWatch")
			o := e.NewClient()
			wCreate("a")(e, o)
			wCreate("a/b")(e, o)
			wCreate("a/b/c")(e, o)
			wSet("a/b/c")(e, o)
			wDelete("a/b/c")(e, o)
			wDelete("a/b")(e, o)
			wSet("a")(e, o)
			wCreate("x")(e, o) // a sibling: outside
			e.wantEvents(e.C, w, "NodeCreated a, NodeCreated a/b, NodeCreated a/b/c, NodeDataChanged a/b/c, NodeDeleted a/b/c, NodeDeleted a/b, NodeDataChanged a", "recursive")
		}},
		{"pwatch/own-write-before-reply", "a persistent watch's notification of the session's own write arrives before that write's reply", func(e *Env) {
			_, w := addW(e.C, e.P("a"), persistent)
			p := e.C.Send(create(e.P("a"), task.Persistent))
			p.Wait()
			e.True(w.FiredAt() != 0 && w.FiredAt() < p.At(), "event at %d, reply at %d", w.FiredAt(), p.At())
		}},
		{"pwatch/remove-any", "RemoveWatches(Any) ends a persistent watch before its reply, and it reports nothing after", func(e *Env) {
			_, w := addW(e.C, e.P("a"), recursive)
			p := e.C.Send(&task.RemoveWatchesRequest{Path: e.P("a"), Type: task.WatcherAny})
			e.Err(p.Wait().Err, nil, "removeWatches")
			evs := w.Events()
			e.True(len(evs) == 1 && evs[0].Type == task.EventWatchRemoved && w.FiredAt() < p.At(),
				"events %v (at %d, reply at %d), want WatchRemoved before the reply", evs, w.FiredAt(), p.At())
			wCreate("a")(e, e.NewClient())
			e.C.Barrier()
			e.Eq(len(w.Events()), 1, "events after removal")
		}},
		{"pwatch/remove-nowatcher", "RemoveWatches of a path the session watches nothing on fails with NoWatcher, also right after the watch was removed", func(e *Env) {
			e.Mk("a")
			e.Err(removeW(e.C, e.P("a"), task.WatcherAny).Err, task.CodeNoWatcher, "remove, no watch")
			addW(e.C, e.P("a"), persistent)
			e.Err(removeW(e.C, e.P("a"), task.WatcherAny).Err, nil, "remove")
			e.Err(removeW(e.C, e.P("a"), task.WatcherAny).Err, task.CodeNoWatcher, "remove again")
			// Another session's watch is not this one's.
			o := e.NewClient()
			addW(o, e.P("a"), persistent)
			e.Err(removeW(e.C, e.P("a"), task.WatcherAny).Err, task.CodeNoWatcher, "remove another's")
			// A recursive watch covers a's children, but is not on them.
			addW(e.C, e.P("a"), recursive)
			e.Err(removeW(e.C, e.P("a/b"), task.WatcherAny).Err, task.CodeNoWatcher, "remove below a recursive watch")
		}},
		{"pwatch/remove-oneshot", "RemoveWatches(Data) ends a one-time data watch with WatchRemoved before its reply, and it fires no more; Children then finds no watch", func(e *Env) {
			e.Mk("a")
			_, w := getW(e.C, e.P("a"))
			p := e.C.Send(&task.RemoveWatchesRequest{Path: e.P("a"), Type: task.WatcherData})
			e.Err(p.Wait().Err, nil, "remove data")
			evs := w.Events()
			e.True(len(evs) == 1 && evs[0].Type == task.EventWatchRemoved && evs[0].Path == e.P("a") && w.FiredAt() < p.At(),
				"events %v (at %d, reply at %d), want WatchRemoved before the reply", evs, w.FiredAt(), p.At())
			wSet("a")(e, e.NewClient())
			e.C.Barrier()
			e.Eq(len(w.Events()), 1, "events after removal")
			e.Err(removeW(e.C, e.P("a"), task.WatcherChildren).Err, task.CodeNoWatcher, "remove children, none set")
		}},
		{"pwatch/remove-any-order", "RemoveWatches(Any) ends a session's watches on the path kind by kind, as the client holds them: the one-time data and exist watches, then the one-time child watches, then the persistent ones, whatever order they were set in", func(e *Env) {
			e.Mk("a")
			_, child := childrenW(e.C, e.P("a"))
			_, pw := addW(e.C, e.P("a"), persistent)
			_, data := getW(e.C, e.P("a"))
			e.Err(removeW(e.C, e.P("a"), task.WatcherAny).Err, nil, "remove any")
			e.C.Barrier()
			for _, w := range []*Watch{child, pw, data} {
				evs := w.Events()
				e.True(len(evs) == 1 && evs[0].Type == task.EventWatchRemoved, "events %v, want one WatchRemoved", evs)
			}
			e.True(data.FiredAt() < child.FiredAt() && child.FiredAt() < pw.FiredAt(),
				"WatchRemoved at data %d, child %d, persistent %d: want data, child, persistent", data.FiredAt(), child.FiredAt(), pw.FiredAt())
		}},
		{"pwatch/remove-children-type", "RemoveWatches(Children) takes a persistent watch out of the child list only: it keeps its data events (3.8)", func(e *Env) {
			e.Mk("a")
			_, w := addW(e.C, e.P("a"), persistent)
			e.Err(removeW(e.C, e.P("a"), task.WatcherChildren).Err, nil, "remove children")
			o := e.NewClient()
			wCreate("a/c")(e, o)
			wSet("a")(e, o)
			e.wantEvents(e.C, w, "NodeDataChanged a", "after removing the child list")
		}},
		{"pwatch/remove-data-type", "RemoveWatches(Data) takes a persistent watch out of the data list only: it keeps its child events (3.8)", func(e *Env) {
			e.Mk("a")
			_, w := addW(e.C, e.P("a"), persistent)
			e.Err(removeW(e.C, e.P("a"), task.WatcherData).Err, nil, "remove data")
			o := e.NewClient()
			wSet("a")(e, o)
			wCreate("a/c")(e, o)
			e.wantEvents(e.C, w, "NodeChildrenChanged a", "after removing the data list")
		}},
		{"pwatch/oneshot-same-path", "a one-time data watch on a persistent watch's path: both fire on the next change, then the persistent watch misses data changes (3.8 keeps one mode per session and path) and keeps child events", func(e *Env) {
			e.Mk("a")
			_, pw := addW(e.C, e.P("a"), persistent)
			_, ow := getW(e.C, e.P("a"))
			o := e.NewClient()
			wSet("a")(e, o)
			wSet("a")(e, o)
			wCreate("a/c")(e, o)
			e.wantEvents(e.C, ow, "NodeDataChanged a", "one-time")
			e.wantEvents(e.C, pw, "NodeDataChanged a, NodeChildrenChanged a", "persistent")
		}},
		{"pwatch/oneshot-below-recursive", "a one-time watch below a recursive watch: one notification reaches both, and the recursive watch goes on", func(e *Env) {
			e.Mk("a")
			_, rw := addW(e.C, e.P("a"), recursive)
			_, ow := existsW(e.C, e.P("a/b"))
			o := e.NewClient()
			wCreate("a/b")(e, o)
			wSet("a/b")(e, o)
			e.wantEvents(e.C, ow, "NodeCreated a/b", "one-time")
			e.wantEvents(e.C, rw, "NodeCreated a/b, NodeDataChanged a/b", "recursive")
		}},
		{"pwatch/recursive-beside-child-watch", "a recursive watch and a one-time child watch of one session on one path: the child event goes to the one-time watch only (the client leaves recursive watches out of NodeChildrenChanged, as ZooKeeper's client does from 3.9.0, ZOOKEEPER-4475), and the recursive watch reports the creations below", func(e *Env) {
			e.Mk("a")
			_, rw := addW(e.C, e.P("a"), recursive)
			_, cw := childrenW(e.C, e.P("a"))
			o := e.NewClient()
			wCreate("a/b")(e, o)
			wCreate("a/b/c")(e, o) // a child of a/b: the server notifies a/b's child list
			wCreate("a/d")(e, o)
			e.wantEvents(e.C, cw, "NodeChildrenChanged a", "one-time child watch")
			e.wantEvents(e.C, rw, "NodeCreated a/b, NodeCreated a/b/c, NodeCreated a/d", "recursive")
		}},
		{"pwatch/two-watches-same-path", "a persistent and a recursive watch of one session on one path: the recursive one takes the path's child list on a 3.8.0 server, so the persistent one misses child events", func(e *Env) {
			_, w1 := addW(e.C, e.P("a"), persistent)
			_, w2 := addW(e.C, e.P("a"), recursive)
			o := e.NewClient()
			wCreate("a")(e, o)
			wCreate("a/b")(e, o)
			e.wantEvents(e.C, w1, "NodeCreated a", "persistent")
			e.wantEvents(e.C, w2, "NodeCreated a, NodeCreated a/b", "recursive")
		}},
		{"pwatch/survives-reconnect", "a persistent watch lives on across a reconnect of its session: the stream shows the transitions, then the watch fires again", func(e *Env) {
			d := Need[Dropper](e)
			_, w := addW(e.C, e.P("a"), recursive)
			d.Drop(e.T, e.C.Conn, false)
			e.C.WaitState(task.StateConnected, 2)
			// A request made after the reconnect is handled after the watch
			// is set again; a change after its reply is reported.
			e.C.Barrier()
			wCreate("a")(e, e.NewClient())
			e.wantEvents(e.C, w, "NodeCreated a", "after reconnect")
			var states []task.State
			for _, ev := range w.Events() {
				if ev.Type == task.EventNone {
					states = append(states, ev.State)
				}
			}
			e.Eq(states, []task.State{task.StateSuspended, task.StateConnected}, "transitions in the stream")
		}},
		{"pwatch/ends-on-expiry", "a persistent watch ends with NotWatching (Expired) when its session expires; the new session has no watch", func(e *Env) {
			x := Need[Expirer](e)
			c := e.NewClient()
			_, w := addW(c, e.P("a"), persistent)
			x.Expire(e.T, c.Conn)
			c.WaitState(task.StateConnected, 2)
			wCreate("a")(e, e.NewClient())
			c.Barrier()
			var last task.Event
			for _, ev := range w.Events() {
				if ev.Type != task.EventNone {
					last = ev
				}
			}
			e.True(last.Type == task.EventNotWatching && last.State == task.StateExpired, "last event %v, want NotWatching Expired", last)
			e.Err(removeW(c, e.P("a"), task.WatcherAny).Err, task.CodeNoWatcher, "remove in the new session")
		}},
	}
}

package conformance

import (
	"github.com/zkflow/zkflow/task"
)

func existsW(c *Client, p string) (task.Response, *Watch) {
	return c.DoW(&task.ExistsRequest{Path: p, Watch: true})
}
func getW(c *Client, p string) (task.Response, *Watch) {
	return c.DoW(&task.GetDataRequest{Path: p, Watch: true})
}
func childrenW(c *Client, p string) (task.Response, *Watch) {
	return c.DoW(&task.GetChildrenRequest{Path: p, Watch: true})
}

// A trigger case: set a watch with one client, write with another (or the
// same), expect one event or none.
type trig struct {
	name, checks string
	setup        []string // persistent nodes under Base
	watch        func(*Client, string) (task.Response, *Watch)
	on           string // watched node, relative
	write        func(e *Env, c *Client)
	want         task.EventType // 0: must not fire
	at           string         // the event's path, relative ("" = on)
	sameClient   bool
}

func (tc trig) run(e *Env) {
	e.Mk(tc.setup...)
	w := e.C
	_, wt := tc.watch(w, e.P(tc.on))
	writer := w
	if !tc.sameClient {
		writer = e.NewClient()
	}
	tc.write(e, writer)
	if tc.want == 0 {
		e.NoEvents(w, wt, "after write")
		return
	}
	at := tc.at
	if at == "" {
		at = tc.on
	}
	e.OneEvent(w, wt, tc.want, e.P(at))
}

func wCreate(rel string) func(*Env, *Client) {
	return func(e *Env, c *Client) { e.Err(c.Do(create(e.P(rel), task.Persistent)).Err, nil, "create "+rel) }
}
func wCreateMode(rel string, m task.CreateMode) func(*Env, *Client) {
	return func(e *Env, c *Client) { e.Err(c.Do(create(e.P(rel), m)).Err, nil, "create "+rel) }
}
func wSet(rel string) func(*Env, *Client) {
	return func(e *Env, c *Client) {
		e.Err(c.Do(&task.SetDataRequest{Path: e.P(rel), Data: []byte("v"), Version: -1}).Err, nil, "set "+rel)
	}
}
func wDelete(rel string) func(*Env, *Client) {
	return func(e *Env, c *Client) {
		e.Err(c.Do(&task.DeleteRequest{Path: e.P(rel), Version: -1}).Err, nil, "delete "+rel)
	}
}
func wMulti(ops func(e *Env) []task.MultiOp, ok bool) func(*Env, *Client) {
	return func(e *Env, c *Client) {
		r := c.Do(&task.MultiRequest{Ops: ops(e)})
		if ok {
			e.Err(r.Err, nil, "multi")
		} else if r.Err == nil {
			e.T.Errorf("multi succeeded, want failure")
		}
	}
}

func watchTriggerCases() []trig {
	const (
		created  = task.EventNodeCreated
		deleted  = task.EventNodeDeleted
		changed  = task.EventNodeDataChanged
		children = task.EventNodeChildrenChanged
	)
	return []trig{
		{"exists-missing-create", "exists on a missing node sets a watch that fires NodeCreated on creation", nil, existsW, "a", wCreate("a"), created, "", false},
		{"exists-missing-create-ephemeral", "an ephemeral creation fires NodeCreated too", nil, existsW, "a", wCreateMode("a", task.Ephemeral), created, "", false},
		{"exists-set", "exists on an existing node: setData fires NodeDataChanged", []string{"a"}, existsW, "a", wSet("a"), changed, "", false},
		{"exists-delete", "exists on an existing node: delete fires NodeDeleted", []string{"a"}, existsW, "a", wDelete("a"), deleted, "", false},
		{"exists-child-create-silent", "exists watches do not see children: creating a child fires nothing", []string{"a"}, existsW, "a", wCreate("a/b"), 0, "", false},
		{"exists-sibling-silent", "a watch on one path is not fired by a write to another", []string{"a", "b"}, existsW, "a", wSet("b"), 0, "", false},
		{"get-set", "getData sets a data watch: setData fires NodeDataChanged", []string{"a"}, getW, "a", wSet("a"), changed, "", false},
		{"get-delete", "getData's watch: delete fires NodeDeleted", []string{"a"}, getW, "a", wDelete("a"), deleted, "", false},
		{"get-child-create-silent", "a data watch is not fired by creating a child", []string{"a"}, getW, "a", wCreate("a/b"), 0, "", false},
		{"get-child-delete-silent", "a data watch is not fired by deleting a child", []string{"a", "a/b"}, getW, "a", wDelete("a/b"), 0, "", false},
		{"get-same-client", "a client's own write fires its own watch", []string{"a"}, getW, "a", wSet("a"), changed, "", true},
		{"children-create", "getChildren sets a child watch: creating a child fires NodeChildrenChanged on the parent", []string{"a"}, childrenW, "a", wCreate("a/b"), children, "", false},
		{"children-delete", "deleting a child fires NodeChildrenChanged on the parent", []string{"a", "a/b"}, childrenW, "a", wDelete("a/b"), children, "", false},
		{"children-sequential", "a sequential child's creation fires NodeChildrenChanged", []string{"a"}, childrenW, "a", wCreateMode("a/s-", task.PersistentSequential), children, "", false},
		{"children-node-deleted", "deleting the watched node itself fires NodeDeleted on a child watch", []string{"a"}, childrenW, "a", wDelete("a"), deleted, "", false},
		{"children-set-silent", "setData on the node does not fire its child watch", []string{"a"}, childrenW, "a", wSet("a"), 0, "", false},
		{"children-child-set-silent", "setData on a child does not fire the parent's child watch", []string{"a", "a/b"}, childrenW, "a", wSet("a/b"), 0, "", false},
		{"children-grandchild-silent", "a grandchild's creation does not fire the grandparent's child watch", []string{"a", "a/b"}, childrenW, "a", wCreate("a/b/c"), 0, "", false},
		{"children-same-client", "a client's own child create fires its own child watch", []string{"a"}, childrenW, "a", wCreate("a/b"), children, "", true},
		{"exists-failed-create-silent", "a failed write fires nothing", []string{"a"}, existsW, "a", func(e *Env, c *Client) {
			e.Err(c.Do(create(e.P("a"), task.Persistent)).Err, task.ErrNodeExists, "create")
		}, 0, "", false},
		{"get-bad-version-silent", "a setData refused with BadVersion fires nothing", []string{"a"}, getW, "a", func(e *Env, c *Client) {
			e.Err(c.Do(&task.SetDataRequest{Path: e.P("a"), Version: 9}).Err, task.ErrBadVersion, "set")
		}, 0, "", false},
		{"multi-create", "a multi's create fires NodeCreated", nil, existsW, "a", wMulti(func(e *Env) []task.MultiOp {
			return []task.MultiOp{create(e.P("a"), task.Persistent)}
		}, true), created, "", false},
		{"multi-children", "a multi's create fires the parent's child watch", []string{"p"}, childrenW, "p", wMulti(func(e *Env) []task.MultiOp {
			return []task.MultiOp{create(e.P("p/a"), task.Persistent)}
		}, true), children, "", false},
		{"multi-failed-silent", "a failed multi fires nothing, not even for its rolled-back ops", nil, existsW, "a", wMulti(func(e *Env) []task.MultiOp {
			return []task.MultiOp{create(e.P("a"), task.Persistent), &task.CheckRequest{Path: e.P("missing"), Version: -1}}
		}, false), 0, "", false},
		{"multi-set-twice-once", "two sets in one multi fire a data watch once", []string{"a"}, getW, "a", wMulti(func(e *Env) []task.MultiOp {
			return []task.MultiOp{
				&task.SetDataRequest{Path: e.P("a"), Version: -1},
				&task.SetDataRequest{Path: e.P("a"), Version: -1},
			}
		}, true), changed, "", false},
		{"multi-create-delete", "create and delete in one multi fire NodeCreated first (the watch is one-time)", nil, existsW, "a", wMulti(func(e *Env) []task.MultiOp {
			return []task.MultiOp{create(e.P("a"), task.Persistent), &task.DeleteRequest{Path: e.P("a"), Version: -1}}
		}, true), created, "", false},
	}
}

func watchCases() []Case {
	var cs []Case
	for _, tc := range watchTriggerCases() {
		cs = append(cs, Case{Name: "watch/" + tc.name, Checks: tc.checks, Run: tc.run})
	}
	cs = append(cs,
		Case{"watch/ephemeral-close-deleted", "closing the owner of an ephemeral fires NodeDeleted on other sessions' watches", func(e *Env) {
			c2 := e.NewClient()
			c2.Do(create(e.P("e"), task.Ephemeral))
			_, w := existsW(e.C, e.P("e"))
			c2.Conn.Close()
			e.Target.Settle()
			e.OneEvent(e.C, w, task.EventNodeDeleted, e.P("e"))
		}},
		Case{"watch/ephemeral-close-parent", "closing the owner of an ephemeral fires the parent's child watch", func(e *Env) {
			c2 := e.NewClient()
			c2.Do(create(e.P("e"), task.Ephemeral))
			_, w := childrenW(e.C, e.Base)
			c2.Conn.Close()
			e.Target.Settle()
			e.OneEvent(e.C, w, task.EventNodeChildrenChanged, e.Base)
		}},
		Case{"watch/get-missing-none", "getData on a missing node sets no watch: a later create fires nothing", func(e *Env) {
			r, w := getW(e.C, e.P("a"))
			e.Err(r.Err, task.ErrNoNode, "get")
			e.Mk("a")
			e.NoEvents(e.C, w, "after create")
		}},
		Case{"watch/children-missing-none", "getChildren on a missing node sets no watch", func(e *Env) {
			r, w := childrenW(e.C, e.P("a"))
			e.Err(r.Err, task.ErrNoNode, "children")
			e.Mk("a", "a/b")
			e.NoEvents(e.C, w, "after create")
		}},
		Case{"watch/one-time", "a watch fires once: a second change fires nothing more", func(e *Env) {
			e.Mk("a")
			_, w := getW(e.C, e.P("a"))
			e.Set(e.P("a"), "1")
			e.Set(e.P("a"), "2")
			e.OneEvent(e.C, w, task.EventNodeDataChanged, e.P("a"))
		}},
		Case{"watch/rearm", "a watch set again after firing fires again", func(e *Env) {
			e.Mk("a")
			_, w1 := getW(e.C, e.P("a"))
			e.Set(e.P("a"), "1")
			w1.Wait()
			_, w2 := getW(e.C, e.P("a"))
			e.Set(e.P("a"), "2")
			e.OneEvent(e.C, w2, task.EventNodeDataChanged, e.P("a"))
		}},
		Case{"watch/two-requests-both-fire", "two watches of one client on one path both receive the event", func(e *Env) {
			e.Mk("a")
			_, w1 := getW(e.C, e.P("a"))
			_, w2 := existsW(e.C, e.P("a"))
			e.Set(e.P("a"), "1")
			e.OneEvent(e.C, w1, task.EventNodeDataChanged, e.P("a"))
			e.OneEvent(e.C, w2, task.EventNodeDataChanged, e.P("a"))
		}},
		Case{"watch/two-clients-both-fire", "watches of two sessions on one path both fire", func(e *Env) {
			e.Mk("a")
			c2 := e.NewClient()
			_, w1 := getW(e.C, e.P("a"))
			_, w2 := getW(c2, e.P("a"))
			e.Set(e.P("a"), "1")
			e.OneEvent(e.C, w1, task.EventNodeDataChanged, e.P("a"))
			e.OneEvent(c2, w2, task.EventNodeDataChanged, e.P("a"))
		}},
		Case{"watch/delete-fires-data-and-child", "deleting a node fires both its data watch and its child watch", func(e *Env) {
			e.Mk("a")
			_, wd := getW(e.C, e.P("a"))
			_, wc := childrenW(e.C, e.P("a"))
			e.Delete(e.P("a"))
			e.OneEvent(e.C, wd, task.EventNodeDeleted, e.P("a"))
			e.OneEvent(e.C, wc, task.EventNodeDeleted, e.P("a"))
		}},
		Case{"watch/delete-fires-parent-child-watch", "deleting a node fires its parent's child watch as well", func(e *Env) {
			e.Mk("a")
			_, wp := childrenW(e.C, e.Base)
			e.Delete(e.P("a"))
			e.OneEvent(e.C, wp, task.EventNodeChildrenChanged, e.Base)
		}},
		Case{"watch/create-fires-both", "creating a node fires its exists watch and its parent's child watch", func(e *Env) {
			_, we := existsW(e.C, e.P("a"))
			_, wp := childrenW(e.C, e.Base)
			e.Mk("a")
			e.OneEvent(e.C, we, task.EventNodeCreated, e.P("a"))
			e.OneEvent(e.C, wp, task.EventNodeChildrenChanged, e.Base)
		}},
		Case{"watch/exists-error-invalid-none", "an exists refused for an invalid path sets no watch", func(e *Env) {
			r, w := existsW(e.C, "bad")
			e.Err(r.Err, task.ErrInvalidPath, "exists")
			e.NoEvents(e.C, w, "after barrier")
		}},
		Case{"watch/close-not-watching", "closing the session completes its watches with NotWatching (Closed) before StateClosed", func(e *Env) {
			c2 := e.NewClient()
			e.Mk("a")
			_, w := getW(c2, e.P("a"))
			c2.Conn.Close()
			ev := w.Wait()
			e.Eq([2]any{ev.Type, ev.State}, [2]any{task.EventNotWatching, task.StateClosed}, "event")
			c2.WaitState(task.StateClosed, 1)
		}},
		Case{"watch/expire-not-watching", "an expired session's watches get NotWatching with State Expired", func(e *Env) {
			x := Need[Expirer](e)
			c2 := e.NewClient()
			e.Mk("a")
			_, w := getW(c2, e.P("a"))
			x.Expire(e.T, c2.Conn)
			ev := w.Wait()
			e.Eq([2]any{ev.Type, ev.State}, [2]any{task.EventNotWatching, task.StateExpired}, "event")
		}},
		Case{"watch/expired-watch-not-fired", "after expiry a change does not fire the old session's watch with a node event", func(e *Env) {
			x := Need[Expirer](e)
			c2 := e.NewClient()
			e.Mk("a")
			_, w := getW(c2, e.P("a"))
			x.Expire(e.T, c2.Conn)
			c2.WaitState(task.StateConnected, 2)
			e.Set(e.P("a"), "x")
			c2.Barrier()
			evs := w.Events()
			e.True(len(evs) == 1 && evs[0].Type == task.EventNotWatching, "events %v", evs)
		}},
		Case{"watch/survives-drop", "a watch survives a dropped connection of the same session and fires afterwards", func(e *Env) {
			d := Need[Dropper](e)
			e.Mk("a")
			_, w := getW(e.C, e.P("a"))
			d.Drop(e.T, e.C.Conn, false)
			e.C.WaitState(task.StateConnected, 2)
			c2 := e.NewClient()
			c2.Do(&task.SetDataRequest{Path: e.P("a"), Version: -1})
			e.OneEvent(e.C, w, task.EventNodeDataChanged, e.P("a"))
		}},
		Case{"watch/change-while-partitioned", "a change made while the client was cut off fires its watch on reconnect (SetWatches)", func(e *Env) {
			p := Need[Partitioner](e)
			e.Mk("a")
			_, w := getW(e.C, e.P("a"))
			c2 := e.NewClient()
			p.Partition(e.T, e.C.Conn, DefaultTimeout/4)
			c2.Do(&task.SetDataRequest{Path: e.P("a"), Version: -1})
			e.True(len(w.Events()) == 0, "fired while cut off")
			p.Advance(DefaultTimeout / 2)
			e.C.WaitState(task.StateConnected, 2)
			e.OneEvent(e.C, w, task.EventNodeDataChanged, e.P("a"))
		}},
		Case{"watch/created-while-partitioned", "an exists watch on a missing node fires NodeCreated on reconnect if the node appeared meanwhile", func(e *Env) {
			p := Need[Partitioner](e)
			_, w := existsW(e.C, e.P("a"))
			c2 := e.NewClient()
			p.Partition(e.T, e.C.Conn, DefaultTimeout/4)
			c2.Do(create(e.P("a"), task.Persistent))
			p.Advance(DefaultTimeout / 2)
			e.C.WaitState(task.StateConnected, 2)
			e.OneEvent(e.C, w, task.EventNodeCreated, e.P("a"))
		}},
		Case{"watch/deleted-while-partitioned", "a child watch fires NodeDeleted on reconnect if the node went meanwhile", func(e *Env) {
			p := Need[Partitioner](e)
			e.Mk("a")
			_, w := childrenW(e.C, e.P("a"))
			c2 := e.NewClient()
			p.Partition(e.T, e.C.Conn, DefaultTimeout/4)
			c2.Do(&task.DeleteRequest{Path: e.P("a"), Version: -1})
			p.Advance(DefaultTimeout / 2)
			e.C.WaitState(task.StateConnected, 2)
			e.OneEvent(e.C, w, task.EventNodeDeleted, e.P("a"))
		}},
		Case{"watch/unchanged-while-partitioned", "a watch whose node did not change while cut off stays armed and fires later", func(e *Env) {
			p := Need[Partitioner](e)
			e.Mk("a")
			_, w := getW(e.C, e.P("a"))
			p.Partition(e.T, e.C.Conn, DefaultTimeout/4)
			p.Advance(DefaultTimeout / 2)
			e.C.WaitState(task.StateConnected, 2)
			e.NoEvents(e.C, w, "after reconnect")
			e.Set(e.P("a"), "x")
			e.OneEvent(e.C, w, task.EventNodeDataChanged, e.P("a"))
		}},
	)
	return cs
}

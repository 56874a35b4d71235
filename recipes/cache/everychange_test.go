package cache

import (
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// changeCache is one cache under test with the model its OnEvent
// stream and its Nexts build.
type changeCache struct {
	kind    string
	whole   bool
	current func() []Node
	next    func() task.Task[Change]
	events  map[string]Node
	nexts   map[string]Node
	pending *sim.Outcome[Change] // a Next that has not returned
}

func startChangeCache(t *testing.T, w *sim.World, kind string, recursive bool) *changeCache {
	h := &changeCache{kind: kind, events: map[string]Node{}, nexts: map[string]Node{}}
	onEvent := WithOnEvent(func(ev Event) {
		if err := applyEvent(h.events, ev); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
	})
	switch kind {
	case "tree":
		tc := must(NewTree("/t", WithData(), withRecursive(recursive), onEvent))
		must(sim.Run(w, 0, tc.Start()))
		h.whole, h.current, h.next = true, tc.Current, tc.Next
	case "children":
		cc := must(NewChildren("/t", WithData(), onEvent))
		must(sim.Run(w, 0, cc.Start()))
		h.current, h.next = cc.Current, cc.Next
	case "node":
		nc := must(NewNode("/t/a", onEvent))
		must(sim.Run(w, 0, nc.Start()))
		h.current = func() []Node {
			if n, ok := nc.Current(); ok {
				return []Node{n}
			}
			return nil
		}
		h.next = nc.Next
	}
	return h
}

// serverNodes is what the cache of h's kind should hold now.
func (h *changeCache) serverNodes(w *sim.World) map[string]Node {
	out := map[string]Node{}
	add := func(p string) {
		if d, st, ok := w.NodeData(p); ok {
			out[p] = Node{Path: p, Data: d, Stat: st}
		}
	}
	switch h.kind {
	case "node":
		add("/t/a")
	case "children":
		for _, n := range w.Children("/t") {
			add(task.Join("/t", n))
		}
	case "tree":
		var walk func(p string)
		walk = func(p string) {
			if _, ok := w.NodeStat(p); !ok {
				return
			}
			add(p)
			for _, n := range w.Children(p) {
				walk(task.Join(p, n))
			}
		}
		walk("/t")
	}
	return out
}

func (h *changeCache) check(t *testing.T, w *sim.World, what string) {
	t.Helper()
	ok := func() bool {
		m := map[string]Node{}
		for _, n := range h.current() {
			m[n.Path] = n
		}
		return sameNodes(m, h.serverNodes(w), h.whole) == nil
	}
	w.Settle(ok)
	m := map[string]Node{}
	for _, n := range h.current() {
		m[n.Path] = n
	}
	if err := sameNodes(m, h.serverNodes(w), h.whole); err != nil {
		t.Fatalf("%s: %s: settled cache: %v", h.kind, what, err)
	}
	if err := sameNodes(h.events, h.serverNodes(w), h.whole); err != nil {
		t.Fatalf("%s: %s: OnEvent stream: %v", h.kind, what, err)
	}
	prev := map[string]Node{}
	for p, n := range h.nexts {
		prev[p] = n
	}
	out := h.pending
	if out == nil {
		out = sim.Submit(w, 0, h.next())
	}
	w.Settle(func() bool { return out.Done })
	h.pending = nil
	if !out.Done {
		h.pending = out
		if len(m) == len(prev) && sameNodes(m, prev, true) == nil {
			return // nothing changed since the last Next
		}
		t.Fatalf("%s: %s: Next does not return, though the cache differs from the last Next", h.kind, what)
	}
	if out.Err != nil {
		t.Fatalf("%s: %s: Next: %v", h.kind, what, out.Err)
	}
	if err := applyChange(h.nexts, out.V); err != nil {
		t.Fatalf("%s: %s: %v", h.kind, what, err)
	}
	if err := sameNodes(h.nexts, h.serverNodes(w), h.whole); err != nil {
		t.Fatalf("%s: %s: Next's snapshot: %v", h.kind, what, err)
	}
}

// Each kind of change, some in one transaction (a multi), to the nodes
// of every kind of cache: the settled caches, their OnEvent streams and
// their Nexts hold exactly the server's nodes.
func TestEveryKindOfChangeSettlesExactly(t *testing.T) {
	unit := func(t task.Task[[]task.MultiResult]) task.Task[task.Unit] {
		return c.Map(t, func([]task.MultiResult) task.Unit { return task.Unit{} })
	}
	mk := func(p, d string) task.Task[task.Unit] {
		return c.Map(task.Create(p, []byte(d), task.Persistent), func(string) task.Unit { return task.Unit{} })
	}
	set := func(p, d string) task.Task[task.Unit] {
		return c.Map(task.Set(p, []byte(d), task.AnyVersion), func(task.Stat) task.Unit { return task.Unit{} })
	}
	steps := []struct {
		what string
		t    task.Task[task.Unit]
	}{
		{"create /t/a, /t/a/b", c.Seq(mk("/t/a", "x"), mk("/t/a/b", "y"))},
		{"same data set again", set("/t/a", "x")},
		{"/t/a deleted and made again alike in one multi", unit(task.Multi(
			task.DeleteOp("/t/a/b", task.AnyVersion), task.DeleteOp("/t/a", task.AnyVersion),
			task.CreateOp("/t/a", []byte("x"), task.Persistent), task.CreateOp("/t/a/b", []byte("y"), task.Persistent)))},
		{"/t/a/b deleted and made again", c.Seq(c.Map(task.Delete("/t/a/b", task.AnyVersion), func(task.Unit) task.Unit { return task.Unit{} }), mk("/t/a/b", "y"))},
		{"setACL /t/a then a data change", c.Seq(
			c.Map(task.SetACL("/t/a", task.OpenACL, task.AnyVersion), func(task.Stat) task.Unit { return task.Unit{} }),
			set("/t/a", "z"))},
		{"root deleted and made again with the same children", unit(task.Multi(
			task.DeleteOp("/t/a/b", task.AnyVersion), task.DeleteOp("/t/a", task.AnyVersion), task.DeleteOp("/t", task.AnyVersion),
			task.CreateOp("/t", nil, task.Persistent), task.CreateOp("/t/a", []byte("z"), task.Persistent), task.CreateOp("/t/a/b", []byte("y"), task.Persistent)))},
		{"ephemeral child", c.Map(task.Create("/t/e", []byte("e"), task.Ephemeral), func(string) task.Unit { return task.Unit{} })},
		{"container child with a child", c.Seq(c.Map(task.Create("/t/k", nil, task.Container), func(string) task.Unit { return task.Unit{} }), mk("/t/k/x", ""))},
		{"a node set, created under and deleted under in one multi", unit(task.Multi(
			task.SetOp("/t/a", []byte("w"), task.AnyVersion), task.CreateOp("/t/a/c", nil, task.Persistent), task.DeleteOp("/t/a/c", task.AnyVersion)))},
		{"root deleted", c.Map(task.DeleteAll("/t"), func(int) task.Unit { return task.Unit{} })},
		{"root made again", c.Seq(mk("/t", ""), mk("/t/a", "x"))},
	}
	for _, kind := range []string{"tree", "tree-recursive", "children", "node"} {
		t.Run(kind, func(t *testing.T) {
			w := newWorld(t, 2)
			must(sim.Run(w, 1, mk("/t", "")))
			k := kind
			if k == "tree-recursive" {
				k = "tree"
			}
			h := startChangeCache(t, w, k, kind == "tree-recursive")
			h.check(t, w, "start")
			for _, s := range steps {
				must(sim.Run(w, 1, s.t))
				h.check(t, w, s.what)
			}
		})
	}
}

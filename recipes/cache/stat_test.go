package cache

import (
	"fmt"
	"slices"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// exactly reports how nodes differ from the server's nodes at their paths,
// whole Stats compared (Aversion aside: a setACL fires no watch, so no
// cache can follow it, and none of these tests sets an ACL).
func exactly(w *sim.World, nodes []Node) error {
	for _, n := range nodes {
		st, ok := w.NodeStat(n.Path)
		if !ok {
			return fmt.Errorf("%s: cached, but not on the server", n.Path)
		}
		if statFields(n.Stat, true) != statFields(st, true) {
			return fmt.Errorf("%s: cached Stat %+v, server %+v", n.Path, n.Stat, st)
		}
	}
	return nil
}

// A TreeCache keeps every node's whole Stat, in both modes: a child
// created or deleted changes its parent's Cversion, NumChildren and Pzxid,
// and the settled cache, its OnEvent stream and its Next snapshots show
// the parent as the server has it. A child created and deleted between two
// Nexts leaves only its parent's Stat changed: Next reports the parent
// Changed.
func TestTreeParentStat(t *testing.T) {
	for _, recursive := range []bool{false, true} {
		t.Run(fmt.Sprintf("recursive=%v", recursive), func(t *testing.T) {
			w := newWorld(t, 2)
			mk := func(p string) task.Task[task.Unit] {
				return c.Map(task.Create(p, nil, task.Persistent), func(string) task.Unit { return task.Unit{} })
			}
			del := func(p string) task.Task[task.Unit] { return task.Delete(p, task.AnyVersion) }
			must(sim.Run(w, 1, mk("/t")))
			model := map[string]Node{}
			var events []Event
			tc := must(NewTree("/t", withRecursive(recursive), WithOnEvent(func(ev Event) {
				events = append(events, ev)
				if err := applyEvent(model, ev); err != nil {
					t.Error(err)
				}
			})))
			must(sim.Run(w, 0, tc.Start()))
			next := map[string]Node{}
			settled := func(what string) {
				t.Helper()
				w.Settle(func() bool { return exactly(w, tc.Current()) == nil })
				if err := exactly(w, tc.Current()); err != nil {
					t.Fatalf("%s: settled cache: %v", what, err)
				}
				if err := exactly(w, sortedNodes(model)); err != nil {
					t.Fatalf("%s: OnEvent stream: %v", what, err)
				}
				if len(model) != len(tc.Current()) {
					t.Fatalf("%s: OnEvent stream holds %v, cache %v", what, sortedPaths(model), paths(tc.Current()))
				}
				ch := must(sim.Run(w, 0, tc.Next()))
				if err := applyChange(next, ch); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if err := exactly(w, ch.Nodes); err != nil {
					t.Fatalf("%s: Next snapshot: %v", what, err)
				}
			}
			settled("start")

			must(sim.Run(w, 1, c.Seq(mk("/t/a"), mk("/t/a/b"))))
			settled("create /t/a and /t/a/b")
			if n := must(sim.Run(w, 0, task.Exists("/t"))); n == nil || n.NumChildren != 1 {
				t.Fatalf("server's /t: %+v", n)
			}

			must(sim.Run(w, 1, del("/t/a/b")))
			settled("delete /t/a/b")

			events = nil
			must(sim.Run(w, 1, c.Seq(mk("/t/x"), del("/t/x"))))
			w.Settle(func() bool { return exactly(w, tc.Current()) == nil })
			ch := must(sim.Run(w, 0, tc.Next()))
			if !slices.Equal(paths(ch.Changed), []string{"/t"}) || len(ch.Added)+len(ch.Removed)+len(ch.Recreated) != 0 {
				t.Fatalf("Next after /t/x created and deleted: changed %v added %v removed %v recreated %v; want changed [/t]",
					paths(ch.Changed), paths(ch.Added), paths(ch.Removed), paths(ch.Recreated))
			}
			if err := applyChange(next, ch); err != nil {
				t.Fatal(err)
			}
			if err := exactly(w, ch.Nodes); err != nil {
				t.Fatalf("Next snapshot: %v", err)
			}
			var changed bool
			for _, ev := range events {
				changed = changed || ev.Type == Changed && ev.Path == "/t"
			}
			if !changed {
				t.Fatalf("OnEvent after /t/x created and deleted: %v, want /t changed", events)
			}
		})
	}
}

// A NodeCache follows its node with a data watch, which a child's
// creation does not fire: the node's children's fields (NumChildren,
// Cversion, Pzxid) stay as of its last read, while the fields a data
// watch follows are kept; the next read (a data change) takes them all.
func TestNodeChildFieldsAsOfRead(t *testing.T) {
	w := newWorld(t, 2)
	must(sim.Run(w, 1, task.Create("/n", []byte("1"), task.Persistent)))
	nc := must(NewNode("/n"))
	must(sim.Run(w, 0, nc.Start()))
	must(sim.Run(w, 1, task.Create("/n/c", nil, task.Persistent)))
	w.Drive()
	n, _ := nc.Current()
	st, _ := w.NodeStat("/n")
	if n.Stat.NumChildren != 0 || statFields(n.Stat, false) != statFields(st, false) {
		t.Fatalf("after a child's creation: cached %+v, server %+v; want the read's NumChildren 0, the data fields the server's", n.Stat, st)
	}
	must(sim.Run(w, 1, task.Set("/n", []byte("2"), task.AnyVersion)))
	w.Settle(func() bool { n, _ := nc.Current(); return string(n.Data) == "2" })
	if err := exactly(w, []Node{cachedNode(nc)}); err != nil {
		t.Fatalf("after a data change: %v", err)
	}
}

// cachedNode returns nc's node, failing the test if it is missing.
func cachedNode(nc *NodeCache) Node {
	current.Helper()
	n, ok := nc.Current()
	if !ok {
		current.Fatal("node not cached")
	}
	return n
}

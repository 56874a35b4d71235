package cache

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// A child created while the cache's session was away (a partition shorter
// than the session timeout: the same session comes back) is read once it
// is back, also under a directory whose counter has run out. There a
// create moves neither the directory's cversion nor its Pzxid (as on
// ZooKeeper: DataTree.createNode), so the child watch set again on the
// reconnect does not fire: the cache lists such a directory again.
func TestChildCreatedWhileAwayAtCounterRunOut(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		tree bool
	}{
		{"children", nil, false},
		{"tree", nil, true},
		{"tree-recursive", []Option{WithRecursive()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 2)
			must(sim.Run(w, 1, task.Create("/d", nil, task.Persistent)))
			if err := w.SetCounters("/d", 0, math.MaxInt32); err != nil {
				t.Fatal(err)
			}
			must(sim.Run(w, 1, task.Create("/d/before", nil, task.Persistent)))
			var current func() []Node
			if tc.tree {
				tr := must(NewTree("/d", tc.opts...))
				must(sim.Run(w, 0, tr.Start()))
				current = tr.Current
				defer func() { must(sim.Run(w, 0, tr.Stop())) }()
			} else {
				cc := must(NewChildren("/d", tc.opts...))
				must(sim.Run(w, 0, cc.Start()))
				current = cc.Current
				defer func() { must(sim.Run(w, 0, cc.Stop())) }()
			}
			has := func(p string) bool {
				return slices.ContainsFunc(current(), func(n Node) bool { return n.Path == p })
			}
			if !has("/d/before") {
				t.Fatal("the cache did not start with /d/before")
			}
			w.Server.Partition(w.Conns[0], time.Second, false)
			must(sim.Run(w, 1, task.Create("/d/while-away", nil, task.Persistent)))
			st, _ := w.Server.NodeStat("/d")
			if (uint32(st.Cversion)+uint32(st.NumChildren))/2 != math.MaxInt32 {
				t.Fatalf("the counter of /d is not run out: %+v", st)
			}
			limit := w.Clock.Now().Add(time.Minute)
			w.Settle(func() bool { return has("/d/while-away") || w.Clock.Now().After(limit) })
			if !has("/d/while-away") {
				t.Fatalf("a minute after the partition healed, the cache has no /d/while-away: %v", names(current()))
			}
		})
	}
}

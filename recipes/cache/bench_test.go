package cache

import (
	"fmt"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// countConn counts the requests a client sends and the watches it asks
// for (one-time watches and AddWatch).
type countConn struct {
	task.Conn
	reqs, watches *int
}

func (c countConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	*c.reqs++
	if task.WatchRequested(req) {
		*c.watches++
	}
	c.Conn.Do(req, done, watch)
}

// BenchmarkTreeCache follows a tree of 1,000 nodes (/t, 9 directories of
// 110 children each) with a TreeCache, in the default mode (a data and a
// child watch per node) and the recursive one (one watch on /t), on
// fakezk, while another session changes it: each iteration is one change
// (in turn: set a leaf's data, create a leaf, delete it) and ends when the
// cache has synced. Metrics: the watches and requests the cache's
// session sent to start (start-watches, start-reqs), and the requests per
// change (reqs/change) and watches per change (watches/change) after,
// and the requests one reconnect of its session costs (reconnect-reqs).
func BenchmarkTreeCache(b *testing.B) {
	for _, recursive := range []bool{false, true} {
		name := "watches"
		if recursive {
			name = "recursive"
		}
		b.Run(name, func(b *testing.B) {
			var reqs, watches int
			w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: func(i int, fc *fakezk.Conn) task.Conn {
				if i == 0 {
					return countConn{Conn: fc, reqs: &reqs, watches: &watches}
				}
				return fc
			}})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			mk := func(p string) task.Task[task.Unit] {
				return c.Map(task.Create(p, []byte("x"), task.Persistent), func(string) task.Unit { return task.Unit{} })
			}
			nodes := 1
			if _, err := sim.Run(w, 1, mk("/t")); err != nil {
				b.Fatal(err)
			}
			for d := range 9 {
				dir := fmt.Sprintf("/t/d%d", d)
				ops := []task.Task[task.Unit]{mk(dir)}
				for k := range 110 {
					ops = append(ops, mk(fmt.Sprintf("%s/n%d", dir, k)))
				}
				if _, err := sim.Run(w, 1, c.Seq(ops[0], c.All(ops[1:]...))); err != nil {
					b.Fatal(err)
				}
				nodes += 1 + 110
			}
			synced := false
			tc, err := NewTree("/t", WithData(), withRecursive(recursive), WithOnSynced(func() { synced = true }))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := sim.Run(w, 0, tc.Start()); err != nil {
				b.Fatal(err)
			}
			if got := len(tc.Current()); got != nodes {
				b.Fatalf("cache holds %d nodes, want %d", got, nodes)
			}
			startReqs, startWatches := reqs, watches
			reqs, watches = 0, 0
			changes := 0
			for b.Loop() {
				leaf := fmt.Sprintf("/t/d%d/n%d", changes%9, changes%110)
				extra := fmt.Sprintf("/t/d%d/extra", changes/3%9)
				var op task.Task[task.Unit]
				switch changes % 3 {
				case 0:
					op = c.Map(task.Set(leaf, []byte(fmt.Sprint(changes)), task.AnyVersion), func(task.Stat) task.Unit { return task.Unit{} })
				case 1:
					op = mk(extra)
				default:
					op = task.Delete(extra, task.AnyVersion)
				}
				synced = false
				if _, err := sim.Run(w, 1, op); err != nil {
					b.Fatal(err)
				}
				if !w.Settle(func() bool { return synced }) {
					b.Fatal("the cache did not sync")
				}
				changes++
			}
			if got := len(tc.Current()); got != nodes && got != nodes+1 {
				b.Fatalf("cache holds %d nodes after the changes", got)
			}
			// One reconnect of the cache's session: the default mode's
			// watches are set again by the connection (SetWatches, not
			// counted: no request of the cache); the recursive mode walks.
			changeReqs, changeWatches := reqs, watches
			reqs = 0
			synced = false
			w.Server.Drop(w.Conns[0], false)
			w.Drive()
			if recursive && !w.Settle(func() bool { return synced }) {
				b.Fatal("the cache did not sync after the reconnect")
			}
			b.ReportMetric(float64(reqs), "reconnect-reqs")
			b.ReportMetric(float64(startWatches), "start-watches")
			b.ReportMetric(float64(startReqs), "start-reqs")
			b.ReportMetric(float64(changeReqs)/float64(changes), "reqs/change")
			b.ReportMetric(float64(changeWatches)/float64(changes), "watches/change")
			if _, err := sim.Run(w, 0, tc.Stop()); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkTreeCacheStart starts a TreeCache (data and a watch per node)
// on a directory of n children on fakezk and runs it until it has synced:
// one iteration is one start. The executor's work per node should not
// grow with n (it did: each read picked the next path by scanning every
// path still to read).
func BenchmarkTreeCacheStart(b *testing.B) {
	for _, n := range []int{1000, 4000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			mk := func(p string) task.Task[task.Unit] {
				return c.Map(task.Create(p, []byte("x"), task.Persistent), func(string) task.Unit { return task.Unit{} })
			}
			ops := make([]task.Task[task.Unit], 0, n)
			for k := range n {
				ops = append(ops, mk(fmt.Sprintf("/t/n%06d", k)))
			}
			if _, err := sim.Run(w, 0, c.Seq(mk("/t"), c.All(ops...))); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				synced := false
				tc, err := NewTree("/t", WithData(), WithOnSynced(func() { synced = true }))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := sim.Run(w, 0, tc.Start()); err != nil {
					b.Fatal(err)
				}
				if !w.Settle(func() bool { return synced }) {
					b.Fatal("never synced")
				}
				if _, err := sim.Run(w, 0, tc.Stop()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/node")
		})
	}
}

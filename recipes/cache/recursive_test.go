package cache

import (
	"errors"
	"slices"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// TestTree's scenario in the recursive mode, which then removes its watch
// at Stop: the session holds no watch on the root afterwards. Recursive is
// refused by the other caches.
func TestTreeRecursive(t *testing.T) {
	w := newWorld(t, 2)
	tc := must(NewTree("/t", WithData(), WithRecursive()))
	must(sim.Run(w, 0, tc.Start()))
	if got := tc.Current(); len(got) != 0 {
		t.Fatalf("missing root: cached %v", paths(got))
	}
	mk := func(p, data string) task.Task[task.Unit] {
		return c.Map(task.Create(p, []byte(data), task.Persistent), func(string) task.Unit { return task.Unit{} })
	}
	must(sim.Run(w, 1, c.Seq(mk("/t", ""), c.Seq(mk("/t/a", "1"), c.Seq(mk("/t/a/b", "2"), mk("/t/c", "3"))))))
	w.Settle(func() bool { return len(tc.Current()) == 4 })
	ch := must(sim.Run(w, 0, tc.Next()))
	if want := []string{"/t", "/t/a", "/t/a/b", "/t/c"}; !slices.Equal(paths(ch.Nodes), want) {
		t.Fatalf("tree %v, want %v", paths(ch.Nodes), want)
	}
	must(sim.Run(w, 1, c.Seq(task.Delete("/t/a/b", -1), c.Seq(task.Delete("/t/a", -1), mk("/t/c/d", "4")))))
	w.Settle(func() bool { return len(tc.Current()) == 3 })
	ch = must(sim.Run(w, 0, tc.Next()))
	if !slices.Equal(paths(ch.Removed), []string{"/t/a", "/t/a/b"}) || !slices.Equal(paths(ch.Added), []string{"/t/c/d"}) {
		t.Fatalf("removed %v added %v; want removed [/t/a /t/a/b], added [/t/c/d]", paths(ch.Removed), paths(ch.Added))
	}
	if d := ch.Added[0].Data; string(d) != "4" {
		t.Fatalf("data %q", d)
	}
	must(sim.Run(w, 0, tc.Stop()))
	w.Drive()
	if _, err := sim.Run(w, 0, task.RemoveWatches("/t", task.WatcherAny)); !errors.Is(err, task.CodeNoWatcher) {
		t.Fatalf("RemoveWatches after Stop: %v, want NoWatcher (Stop removes the watch)", err)
	}
	if _, err := NewChildren("/t", WithRecursive()); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("NewChildren with Recursive: %v", err)
	}
	if _, err := NewNode("/t", WithRecursive()); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("NewNode with Recursive: %v", err)
	}
}

// Two recursive caches of one root on one session: stopping one removes
// the session's watch on the root (RemoveWatches of type Any); the other
// sets it again, walks, and goes on following the tree.
func TestTreeRecursiveSharedRoot(t *testing.T) {
	w := newWorld(t, 2)
	must(sim.Run(w, 1, task.Create("/t", nil, task.Persistent)))
	a := must(NewTree("/t", WithRecursive()))
	b := must(NewTree("/t", WithRecursive()))
	must(sim.Run(w, 0, a.Start()))
	must(sim.Run(w, 0, b.Start()))
	must(sim.Run(w, 0, a.Stop()))
	w.Drive()
	must(sim.Run(w, 1, task.Create("/t/x", nil, task.Persistent)))
	if !w.Settle(func() bool { return len(b.Current()) == 2 }) {
		t.Fatalf("the cache left running holds %v, want /t and /t/x", paths(b.Current()))
	}
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
}

// A recursive TreeCache is told nothing of a change to a node its session
// may not READ: ZooKeeper withholds the event, and a recursive watch sends
// no NodeChildrenChanged for the parent. An operator closes /t/k, another
// session deletes it (its ACL goes with it), and the cache used to hold
// /t/k, and /t's Stat from before the delete, for good: nothing else
// named them. The package doc promises the cache caught up by its
// watches' next re-read once the READ is back; a recursive watch had
// none. Now the cache reads its nodes again (exists, which needs no
// permission) every watch re-read period: by then it holds /t alone, as
// the server does, and its next Next reports /t/k removed.
func TestRecursiveCatchesUpAfterWithheldDelete(t *testing.T) {
	w := newWorld(t, 2)
	must(sim.Run(w, 1, c.Seq(task.Create("/t", nil, task.Persistent), task.Create("/t/k", []byte("x"), task.Persistent))))
	tc := must(NewTree("/t", WithData(), WithRecursive()))
	must(sim.Run(w, 0, tc.Start()))
	if ch := must(sim.Run(w, 0, tc.Next())); !slices.Equal(paths(ch.Nodes), []string{"/t", "/t/k"}) {
		t.Fatalf("first snapshot %v, want [/t /t/k]", paths(ch.Nodes))
	}
	closed := []task.ACL{task.DigestACL(task.PermAll, "operator", "operator")}
	if err := w.Server.AdminSetACL(w.ServerPath("/t/k"), closed); err != nil {
		t.Fatal(err)
	}
	must(sim.Run(w, 1, task.Delete("/t/k", task.AnyVersion)))
	w.Drive()
	if got := paths(tc.Current()); !slices.Equal(got, []string{"/t", "/t/k"}) {
		t.Fatalf("cached %v right after the delete: the event was not withheld, the test checks nothing", got)
	}
	next := sim.Submit(w, 0, tc.Next())
	w.Clock.Advance(task.RecheckAfter(w.Timeout()) + time.Second)
	w.Settle(func() bool { return next.Done })
	st, _ := w.NodeStat("/t")
	if got := tc.Current(); len(got) != 1 || got[0].Path != "/t" || got[0].Stat != st {
		t.Fatalf("a re-read period after the delete, cached %v (%+v), want /t alone with the server's Stat %+v", paths(got), got, st)
	}
	if !next.Done || next.Err != nil || !slices.Equal(paths(next.V.Removed), []string{"/t/k"}) {
		t.Fatalf("Next: done %v, %v, removed %v; want /t/k removed", next.Done, next.Err, paths(next.V.Removed))
	}
}

// countingConn counts the exists requests its executor sends.
type countingConn struct {
	*fakezk.Conn
	exists int
}

func (c *countingConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if _, ok := req.(*task.ExistsRequest); ok {
		c.exists++
	}
	c.Conn.Do(req, done, watch)
}

// The recursive mode's re-reads follow the runtime's watch re-read
// setting, as every task.Watch does: by default each cached node is read
// again with exists every twice the session timeout; with
// executor.Config.WatchRecheck below zero, never.
func TestRecursiveRecheckFollowsWatchRecheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		recheck time.Duration
		reads   bool
	}{{"default", 0, true}, {"off", -1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := fakezk.NewClock(fakezk.Epoch)
			srv := fakezk.New(fakezk.Config{Clock: clk})
			conn := &countingConn{Conn: srv.Connect(fakezk.ConnConfig{})}
			ex, err := executor.New(executor.Config{Conn: conn, Clock: clk, Seed: 1, WatchRecheck: tc.recheck})
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Shutdown()
			if err := srv.AdminCreate("/t", nil, 0); err != nil {
				t.Fatal(err)
			}
			if err := srv.AdminCreate("/t/k", nil, 0); err != nil {
				t.Fatal(err)
			}
			tc2, err := NewTree("/t", WithRecursive())
			if err != nil {
				t.Fatal(err)
			}
			var started error = errors.New("not started")
			executor.Submit(ex, tc2.Start(), func(_ *TreeCache, err error) { started = err })
			for ex.RunUntilIdle() > 0 {
			}
			if started != nil || len(tc2.Current()) != 2 {
				t.Fatalf("start: %v, cached %v", started, paths(tc2.Current()))
			}
			before := conn.exists
			for range 3 {
				sess, _ := ex.Current()
				clk.Advance(task.RecheckAfter(sess.Timeout) + time.Second)
				for ex.RunUntilIdle() > 0 {
				}
			}
			if got := conn.exists - before; (got > 0) != tc.reads {
				t.Fatalf("%d exists in three re-read periods; want some: %v", got, tc.reads)
			}
			executor.Submit(ex, tc2.Stop(), func(task.Unit, error) {})
			for ex.RunUntilIdle() > 0 {
			}
		})
	}
}

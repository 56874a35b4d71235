package cache

import (
	"maps"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/task"
)

// onSend calls hook with each request before it is sent.
type onSend struct {
	task.Conn
	hook func(task.Request)
}

func (c *onSend) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.hook(req)
	c.Conn.Do(req, done, watch)
}

// A recursive TreeCache whose watch is removed (another recursive cache
// of the root on the session stops) while a pass is reading sets the
// watch again without starting a second pass beside the first: every
// consistent snapshot it reports (WithOnSynced) is a state of the server,
// the one before the children were created or the one after. With the
// canary, setting the watch counts as the pass running and its end as
// none: a second pass reports a snapshot while the first one's read of a
// child is in flight. (The random plans hardly reach this window since a
// new session's reads wait for its sync.)
func TestRecursiveWatchSetAgainDuringAPass(t *testing.T) {
	canarytest.Both(t, bugPassWhileSettingWatch, func(t *testing.T, bug bool) {
		var (
			w       *sim.World
			tc, tc2 *TreeCache
			armed   bool
		)
		wrap := func(i int, c *fakezk.Conn) task.Conn {
			if i != 0 {
				return c
			}
			return &onSend{Conn: c, hook: func(req task.Request) {
				if r, ok := req.(*task.GetDataRequest); ok && armed && strings.HasPrefix(r.Path, "/t/") {
					// The pass reads a child: the other cache stops
					// right behind that read, removing the session's
					// watches on /t.
					armed = false
					executor.Submit(w.Execs[0], tc2.Stop(), nil)
				}
			}}
		}
		var err error
		w, err = sim.New(sim.Config{Seed: 7, Clients: 2, Wrap: wrap})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Close)
		current = t
		must(sim.Run(w, 1, task.Create("/t", nil, task.Persistent)))
		state := func() map[string]task.Stat {
			m := map[string]task.Stat{}
			for _, p := range w.Paths() {
				if p == "/t" || strings.HasPrefix(p, "/t/") {
					st, _ := w.NodeStat(p)
					m[p] = st
				}
			}
			return m
		}
		before := state()
		bad := 0
		tc = must(NewTree("/t", WithRecursive(), WithOnSynced(func() {
			snap := map[string]task.Stat{}
			for _, n := range tc.Current() {
				snap[n.Path] = n.Stat
			}
			// Nothing is written after the children's create: the
			// server is at one of the two states.
			if maps.Equal(snap, before) || maps.Equal(snap, state()) {
				return
			}
			bad++
			t.Logf("snapshot %v is no state of the server (before the create: %v, now: %v)", snap, before, state())
		})))
		tc2 = must(NewTree("/t", WithRecursive()))
		must(sim.Run(w, 0, tc.Start()))
		must(sim.Run(w, 0, tc2.Start()))
		armed = true
		must(sim.Run(w, 1, task.Multi(
			task.CreateOp("/t/a", []byte("a"), task.Persistent),
			task.CreateOp("/t/b", []byte("b"), task.Persistent),
			task.CreateOp("/t/c", []byte("c"), task.Persistent))))
		w.Drive()
		if armed {
			t.Fatal("setup: the pass never read a child")
		}
		if got := bad > 0; got != bug {
			t.Errorf("%d snapshots were no state of the server; want some: %v", bad, bug)
		}
	})
}

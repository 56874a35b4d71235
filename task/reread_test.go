package task_test

// Watch's doc: ZooKeeper sends no notification to a session that may not
// READ the node, so "a watch waited on for RecheckAfter reads its node
// again with a plain exists ... if the node changed since the read that
// set the watch, the watch fires with the event the change would have
// sent ... It never fires for a change it would not have fired for."
// TestWatchFiresForAChangeWithheldByAnACL fails on the code before the
// re-read (the wait never ends).

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// closedACL is an operator's ACL no client of the world presents.
var closedACL = []task.ACL{task.DigestACL(task.PermAll, "operator", "secret")}

// rereadWorld returns a world (session timeout 4 s) with the persistent
// node /n.
func rereadWorld(t *testing.T) *sim.World {
	t.Helper()
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1, RecheckWatches: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	if _, err := sim.Run(w, 0, task.Create("/n", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	return w
}

// waitFor submits the wait on the watch set, makes the change with the
// operator's hand, and settles for at most limit of simulated time. It
// returns the outcome and how long after the change the wait ended.
func waitFor[W any](t *testing.T, w *sim.World, set task.Task[W], watch func(W) *task.Watch, change func() error, limit time.Duration) (*sim.Outcome[task.Event], time.Duration) {
	t.Helper()
	o := sim.Submit(w, 0, task.Task[task.Event](func(s *task.Scope, k task.Cont[task.Event]) {
		task.Run(s, set, func(v W, err error) {
			if err != nil {
				k(task.Event{}, err)
				return
			}
			task.Run(s, watch(v).Wait(), k)
		})
	}))
	w.Drive()
	if err := w.Server.AdminSetACL("/n", closedACL); err != nil {
		t.Fatal(err)
	}
	if err := change(); err != nil {
		t.Fatal(err)
	}
	start := w.Clock.Now()
	end := start.Add(limit)
	w.Settle(func() bool { return o.Done || !w.Clock.Now().Before(end) })
	return o, w.Clock.Now().Sub(start)
}

// Each kind of watch, its node closed and then changed as the watch
// tells: the wait ends within RecheckAfter, with the event the change
// would have sent.
func TestWatchFiresForAChangeWithheldByAnACL(t *testing.T) {
	data := func(dw task.DataWatch) *task.Watch { return dw.Watch }
	for _, tc := range []struct {
		name string
		wait func(t *testing.T, w *sim.World, change func() error, limit time.Duration) (*sim.Outcome[task.Event], time.Duration)
		// change is the operator's, by the world's server.
		change func(w *sim.World) error
		want   task.EventType
	}{
		{"data watch, delete", func(t *testing.T, w *sim.World, ch func() error, l time.Duration) (*sim.Outcome[task.Event], time.Duration) {
			return waitFor(t, w, task.GetW("/n"), data, ch, l)
		}, func(w *sim.World) error { return w.Server.AdminDelete("/n") }, task.EventNodeDeleted},
		{"child watch, new child", func(t *testing.T, w *sim.World, ch func() error, l time.Duration) (*sim.Outcome[task.Event], time.Duration) {
			return waitFor(t, w, task.ChildrenW("/n"), func(cw task.ChildrenWatch) *task.Watch { return cw.Watch }, ch, l)
		}, func(w *sim.World) error { return w.Server.AdminCreate("/n/c", nil, 0) }, task.EventNodeChildrenChanged},
		{"exists watch, write", func(t *testing.T, w *sim.World, ch func() error, l time.Duration) (*sim.Outcome[task.Event], time.Duration) {
			return waitFor(t, w, task.ExistsW("/n"), func(sw task.StatWatch) *task.Watch { return sw.Watch }, ch, l)
		}, func(w *sim.World) error { return w.Server.AdminSetData("/n", []byte("x")) }, task.EventNodeDataChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := rereadWorld(t)
			bound := 2 * w.Timeout() // RecheckAfter: twice the session timeout
			o, took := tc.wait(t, w, func() error { return tc.change(w) }, 3*bound)
			if !o.Done {
				t.Fatalf("the wait on a watch whose node an operator closed and then changed never ended (%s)", took)
			}
			if o.Err != nil || o.V.Type != tc.want || o.V.Path != "/n" {
				t.Fatalf("wait = %+v, %v; want %v of /n", o.V, o.Err, tc.want)
			}
			if took > bound {
				t.Fatalf("the wait ended %s after the change, want within RecheckAfter (%s)", took, bound)
			}
		})
	}
}

// A data watch does not fire for a new child, even on a node the session
// may no longer read: the re-read fires only for the changes the watch
// would have told of.
func TestWatchRereadMakesUpNoEvent(t *testing.T) {
	w := rereadWorld(t)
	bound := 2 * w.Timeout() // RecheckAfter: twice the session timeout
	o, took := waitFor(t, w, task.GetW("/n"), func(dw task.DataWatch) *task.Watch { return dw.Watch },
		func() error { return w.Server.AdminCreate("/n/c", nil, 0) }, 3*bound)
	if o.Done {
		t.Fatalf("a data watch fired after a child was created (%s): %+v, %v", took, o.V, o.Err)
	}
	if took < 3*bound {
		t.Fatalf("settled only %s of %s", took, 3*bound)
	}
}

// On a fake clock the re-reads are background timers
// (fakezk.Clock.AfterFuncBackground): they keep nothing going, but fire
// when the clock passes them, so the wait ends once time moves on;
// executor.Config.WatchRecheck below zero turns them off, and the wait
// never ends (the behaviour of a ZooKeeper client without them).
func TestWatchRereadOnAFakeClock(t *testing.T) {
	for _, tc := range []struct {
		name    string
		recheck time.Duration
		ends    bool
	}{{"default", 0, true}, {"off", -1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := fakezk.NewClock(fakezk.Epoch)
			srv := fakezk.New(fakezk.Config{Clock: clk})
			ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: clk, Seed: 1, WatchRecheck: tc.recheck})
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Shutdown()
			idle := func() {
				for ex.RunUntilIdle() > 0 {
				}
			}
			var created error
			executor.Submit(ex, task.Create("/n", nil, task.Persistent), func(_ string, err error) { created = err })
			idle()
			if created != nil {
				t.Fatal(created)
			}
			done := false
			executor.Submit(ex, task.Task[task.Event](func(s *task.Scope, k task.Cont[task.Event]) {
				task.Run(s, task.GetW("/n"), func(dw task.DataWatch, err error) {
					if err != nil {
						k(task.Event{}, err)
						return
					}
					task.Run(s, dw.Watch.Wait(), k)
				})
			}), func(task.Event, error) { done = true })
			idle()
			if err := srv.AdminSetACL("/n", closedACL); err != nil {
				t.Fatal(err)
			}
			if err := srv.AdminDelete("/n"); err != nil {
				t.Fatal(err)
			}
			idle()
			for clk.AdvanceToNext() { // the re-read is no timer it moves to
				idle()
			}
			if done {
				t.Fatal("the wait ended with no time passing")
			}
			for range 60 {
				clk.Advance(time.Second)
				idle()
			}
			if done != tc.ends {
				t.Fatalf("after a minute: wait ended %v, want %v", done, tc.ends)
			}
		})
	}
}

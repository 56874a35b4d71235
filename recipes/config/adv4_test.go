package config

import (
	"math"
	"slices"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/task"
)

// Snapshot.Version is no order (its doc): a deletion can lower it. An
// entry deleted by hand (PROTOCOL.md: "An entry edited by hand is a
// configuration change, delivered as any other") is delivered, in a
// snapshot without it, whatever its Version; the doc once promised a
// Version at least as high, which a deletion broke.
func TestAdv4DeletionDeliveredVersionMayFall(t *testing.T) {
	for _, dir := range []bool{true, false} {
		name := map[bool]string{true: "WatchDir", false: "Watch"}[dir]
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, 1)
			run(t, w, 0, Update("/cfg", map[string][]byte{"a": []byte("1")}))
			run(t, w, 0, Update("/cfg", map[string][]byte{"b": []byte("1")}))
			var got []Snapshot
			h := func(s Snapshot) { got = append(got, s) }
			watch := WatchDir("/cfg", DirOptions{}, h)
			if !dir {
				watch = Watch("/cfg/b", h)
			}
			run(t, w, 0, watch)
			if err := w.Server.AdminDelete("/cfg/b"); err != nil {
				t.Fatal(err)
			}
			w.Settle(func() bool { return len(got) >= 2 })
			if len(got) < 2 {
				t.Fatalf("the deletion was not delivered: %d snapshots", len(got))
			}
			last := got[len(got)-1]
			_, has := last.Values["b"]
			if dir && has || !dir && last.Exists {
				t.Errorf("the last snapshot (exists %v, entries %v) still holds b", last.Exists, last.names())
			}
		})
	}
}

// The package doc: "The final state is never missed: a change made while
// the client was disconnected, or while its session expired, is
// delivered after the reconnect", and PROTOCOL.md: "watches already set
// survive the reconnect of the same session". Once the counter of the
// configuration directory has run out (every Update's multi creates and
// deletes root/invalid: two counts per update), a child created no
// longer moves the directory's pzxid, and the server, which compares the
// pzxid when the reconnected client sets its watches again, does not
// fire again the child watch whose notification went with the
// connection. An entry created by hand (a tool that writes one node at a
// time) while the reader is cut off is never delivered.
func TestAdv4EntryCreatedWhileCutOffAtCounterWrap(t *testing.T) {
	w := newWorld(t, 2)
	run(t, w, 0, Update("/cfg", map[string][]byte{"a": []byte("1")}))
	if err := w.SetCounters("/cfg", 0, math.MaxInt32); err != nil {
		t.Fatal(err)
	}
	var got []Snapshot
	run(t, w, 1, WatchDir("/cfg", DirOptions{}, func(s Snapshot) { got = append(got, s) }))
	w.Server.Partition(w.Conns[1], 100*time.Millisecond, false)
	if err := w.Server.AdminCreate("/cfg/b", []byte("2"), 0); err != nil {
		t.Fatal(err)
	}
	w.Settle(func() bool { return len(got) > 0 && got[len(got)-1].Values["b"] != nil })
	if last := got[len(got)-1]; last.Values["b"] == nil {
		t.Errorf("entry b, created while the reader was cut off, never delivered: last snapshot %v (server: %v)",
			last.names(), w.Children("/cfg"))
	}
}

// Reload's doc: "Cleanups it registers with Scope.Defer run when it ends.
// The run for a new version starts only after the previous run's task
// has ended, so two runs never overlap"; the package doc: "Reload
// restarts a component on each new version, and two runs never
// overlap." A run's cleanup (Scope.Defer) is started as a flow of its
// own when the run's scope closes, and the next run is started at once:
// a component that takes something when it starts (here /svc, an
// ephemeral) and gives it back in its cleanup (read it, delete it if it
// is ours) finds it still taken by the run before: the new run fails
// with node exists.
func TestAdv4ReloadRunsOverlapTheirCleanup(t *testing.T) {
	w := newWorld(t, 2)
	run(t, w, 1, Update("/cfg", map[string][]byte{"v": []byte("1")}))
	var log []string
	apply := func(s Snapshot) task.Task[task.Unit] {
		v := string(s.Values["v"])
		return func(sc *task.Scope, k task.Cont[task.Unit]) {
			log = append(log, "start "+v)
			// Give /svc back if it is still ours: read, then delete (as
			// the recipes' own cleanups do, zkops.DeleteOwned).
			sess := sc.Session().ID
			sc.Defer(c.Then(task.Exists("/svc"), func(st *task.Stat) task.Task[task.Unit] {
				if st == nil || st.EphemeralOwner != sess {
					return task.Done
				}
				return c.Map(task.Delete("/svc", st.Version), func(task.Unit) task.Unit {
					log = append(log, "cleaned "+v)
					return task.Unit{}
				})
			}))
			task.Run(sc, task.Create("/svc", []byte(v), task.Ephemeral), func(_ string, err error) {
				if err != nil {
					log = append(log, "run "+v+": "+err.Error())
					k(task.Unit{}, err)
					return
				}
				task.Suspend(sc, k, func(task.Cont[task.Unit]) func() { return nil })
			})
		}
	}
	r := run(t, w, 0, Reload("/cfg", DirOptions{}, apply))
	w.Settle(func() bool { return len(log) > 0 })
	run(t, w, 1, Update("/cfg", map[string][]byte{"v": []byte("2")}))
	w.Settle(func() bool { return r.Runs() == 2 && len(log) >= 3 })
	w.Settle(func() bool { return false })
	run(t, w, 0, r.Stop())
	w.Settle(func() bool { return false })
	for i, e := range log {
		if e == "start 2" && !slices.Contains(log[:i], "cleaned 1") {
			t.Errorf("run 2 started before run 1's cleanup ended: %q (errors reported: %v)", log, w.Errs)
		}
	}
}

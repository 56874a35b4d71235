package config

import (
	"bytes"
	"strconv"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/memcheck"
	"github.com/zkflow/zkflow/task"
)

// A long-lived session's memory is flat however many readers it starts
// and stops and however many updates it writes: memcheck.Cycles cycles
// on one session leave the live scope count under the session scope where
// it was after the warm-up (a stopped watcher's cache scope is closed,
// a reloader's run scope too) and the live heap within memcheck.Bound of
// it. A cycle starts a reader, writes a new configuration, lets the
// reader deliver it, checks the delivery and stops the reader. By kind:
//
//   - node: Watch of one node, written with a set;
//   - dir: WatchDir, written with Update (one multi);
//   - dir/marked: WatchDir with Marker, written with UpdateMarked (the
//     marker created, the entries set one at a time, the marker deleted);
//   - subtree: WatchDir with Subtree, written with Update, which creates
//     an entry; the cycle then deletes the entry and sets the root's data,
//     since a tree reader also watches the root's data and each entry's
//     children, which setting entries does not fire;
//   - reload: Reload with a run that lasts until it is canceled, written
//     with Update: the cycle's write ends the first run (ErrReloaded) and
//     starts a second, which Stop ends.
//
// The writes fire every watch the reader set, and the reader's re-reads
// set new ones, which the next cycle's writes fire: no cycle leaves a
// watch that is never fired. One never fired stays registered until it
// fires (a one-time trigger), with what its callback holds of the
// stopped reader: about 4 KiB a cycle, measured for a directory reader
// whose directory held an entry no cycle wrote. That memory belongs to
// the connection and grows with readers started on nodes that never
// change (an entry nobody writes, a tree reader's leaves); it is not
// what this test measures.
func TestMemoryFlatWatchUpdate(t *testing.T) {
	const root = "/mem/cfg"
	const node = "/mem/node" // not under root: the dir readers would set a data watch on it that no write fires
	value := func(i int) []byte { return strconv.AppendInt(nil, int64(i), 10) }
	entries := func(i int) map[string][]byte { return map[string][]byte{"a": value(i), "b": value(i)} }
	type reader interface {
		Stop() task.Task[task.Unit]
		Latest() (Snapshot, bool)
	}
	kinds := []struct {
		name  string
		start func(t *testing.T, w *sim.World) reader
		write func(i int) task.Task[task.Unit]
		got   func(Snapshot) []byte // what the delivery holds of the write
		clear task.Task[task.Unit]  // fires what the write did not, if anything
	}{
		{"node",
			func(t *testing.T, w *sim.World) reader { return run(t, w, 0, Watch(node, func(Snapshot) {})) },
			func(i int) task.Task[task.Unit] {
				return c.Map(task.Set(node, value(i), task.AnyVersion), func(task.Stat) task.Unit { return task.Unit{} })
			},
			func(s Snapshot) []byte { return s.Data }, nil},
		{"dir",
			func(t *testing.T, w *sim.World) reader {
				return run(t, w, 0, WatchDir(root, DirOptions{}, func(Snapshot) {}))
			},
			func(i int) task.Task[task.Unit] { return Update(root, entries(i)) },
			func(s Snapshot) []byte { return s.Values["b"] }, nil},
		{"dir/marked",
			func(t *testing.T, w *sim.World) reader {
				return run(t, w, 0, WatchDir(root, DirOptions{Marker: true}, func(Snapshot) {}))
			},
			func(i int) task.Task[task.Unit] { return UpdateMarked(root, entries(i)) },
			func(s Snapshot) []byte { return s.Values["b"] }, nil},
		{"subtree",
			func(t *testing.T, w *sim.World) reader {
				return run(t, w, 0, WatchDir(root, DirOptions{Subtree: true}, func(Snapshot) {}))
			},
			func(i int) task.Task[task.Unit] { return Update(root, map[string][]byte{"c": value(i)}) },
			func(s Snapshot) []byte { return s.Values["c"] },
			c.Seq(task.Delete(root+"/c", task.AnyVersion),
				c.Map(task.Set(root, nil, task.AnyVersion), func(task.Stat) task.Unit { return task.Unit{} }))},
		{"reload",
			func(t *testing.T, w *sim.World) reader {
				return reloaded{run(t, w, 0, Reload(root, DirOptions{}, untilCanceled))}
			},
			func(i int) task.Task[task.Unit] { return Update(root, entries(i)) },
			func(s Snapshot) []byte { return s.Values["b"] }, nil},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			w := newWorld(t, 1)
			mkdir(t, w, "/mem", root, node)
			memcheck.Check(t, w.Execs[0].SessionScope().Descendants, func(i int) {
				r := k.start(t, w)
				run(t, w, 0, k.write(i))
				w.Drive() // the reader hears of it, reads and delivers
				if s, ok := r.Latest(); !ok || !bytes.Equal(k.got(s), value(i)) {
					t.Fatalf("cycle %d: delivered %q, want %q", i, k.got(s), value(i))
				}
				if rr, ok := r.(reloaded); ok && rr.Runs() != 2 {
					t.Fatalf("cycle %d: %d runs, want 2", i, rr.Runs())
				}
				if k.clear != nil {
					run(t, w, 0, k.clear)
					w.Drive()
				}
				run(t, w, 0, r.Stop())
			})
			for _, err := range w.Errs {
				t.Errorf("detached flow failed: %v", err)
			}
		})
	}
}

// reloaded is a Reloader as a reader: its watcher's Latest.
type reloaded struct{ *Reloader }

func (r reloaded) Latest() (Snapshot, bool) { return r.Watcher().Latest() }

// untilCanceled is a component's run that lasts until its scope ends.
func untilCanceled(Snapshot) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Suspend(s, k, func(task.Cont[task.Unit]) func() { return nil })
	}
}

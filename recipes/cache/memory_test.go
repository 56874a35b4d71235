package cache

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/memcheck"
	"github.com/zkflow/zkflow/task"
)

// A long-lived session's memory is flat however many caches it starts and
// stops: memcheck.Cycles Start/Stop cycles of each kind of cache, on one
// session, leave the live scope count under the session scope where it
// was after the warm-up (a stopped cache's follower scope must be closed,
// not only canceled) and the live heap within memcheck.Bound of it.
//
// In each cycle the followed node is created and deleted, and the
// directory's data set, while the cache runs, so that the watches the cycle sets fire in the next cycle at the
// latest. A watch nobody fires stays registered until it does: on the
// server, one per request in fakezk, and in the client library (go-zookeeper
// keeps a channel per watching call) with a real server. A cache stopped
// while its watches are pending leaves those behind: that memory belongs
// to the connection and grows with caches started on unchanging nodes; it
// is not what this test measures.
func TestMemoryFlatStartStop(t *testing.T) {
	type cache interface {
		Stop() task.Task[task.Unit]
	}
	kinds := []struct {
		name string
		make func(w *sim.World) cache
	}{
		{"node", func(w *sim.World) cache {
			return must(sim.Run(w, 0, must(NewNode("/mem/n")).Start()))
		}},
		{"children", func(w *sim.World) cache {
			return must(sim.Run(w, 0, must(NewChildren("/mem", WithData())).Start()))
		}},
		{"tree", func(w *sim.World) cache {
			return must(sim.Run(w, 0, must(NewTree("/mem", WithData())).Start()))
		}},
		// Its watch is removed at Stop: an orphan would keep queueing
		// every later event of the subtree.
		{"tree/recursive", func(w *sim.World) cache {
			return must(sim.Run(w, 0, must(NewTree("/mem", WithData(), WithRecursive())).Start()))
		}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			w := newWorld(t, 1)
			must(sim.Run(w, 0, task.Create("/mem", nil, task.Persistent)))
			memcheck.Check(t, w.Execs[0].SessionScope().Descendants, func(int) {
				c := k.make(w)
				must(sim.Run(w, 0, task.Create("/mem/n", nil, task.Persistent)))
				w.Drive() // the cache reads it
				must(sim.Run(w, 0, task.Delete("/mem/n", task.AnyVersion)))
				must(sim.Run(w, 0, task.Set("/mem", nil, task.AnyVersion))) // the tree's root
				w.Drive()
				must(sim.Run(w, 0, c.Stop()))
			})
			for _, err := range w.Errs {
				t.Errorf("detached flow failed: %v", err)
			}
		})
	}
}

package barrier_test

import (
	"fmt"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/memcheck"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
)

// A long-lived session's memory is flat however many times it passes a
// barrier: memcheck.Cycles cycles on one session leave the live scope
// count under the session scope where it was after the warm-up and the
// live heap within memcheck.Bound of it. A barrier cycle sets the
// barrier, waits on it and removes it (the wait then returns); a double
// barrier cycle (of size 1) enters and leaves a new directory, then
// deletes it.
func TestMemoryFlatEnterLeave(t *testing.T) {
	t.Run("barrier", func(t *testing.T) {
		w := newMemWorld(t)
		b, err := barrier.New("/mem/barrier")
		if err != nil {
			t.Fatal(err)
		}
		memcheck.Check(t, w.Execs[0].SessionScope().Descendants, func(int) {
			mustDo(t, w, b.Set(nil))
			o := sim.Submit(w, 0, b.Wait())
			w.Drive()
			if o.Done {
				t.Fatalf("wait on a set barrier returned: %v", o.Err)
			}
			mustDo(t, w, b.Remove())
			w.Drive()
			if !o.Done || o.Err != nil {
				t.Fatalf("wait after remove: %+v", o)
			}
		})
	})
	t.Run("double", func(t *testing.T) {
		w := newMemWorld(t)
		memcheck.Check(t, w.Execs[0].SessionScope().Descendants, func(i int) {
			// A directory serves one round (see the package doc): a new
			// one per round, deleted once every participant has left.
			dir := fmt.Sprintf("/mem/double/r%d", i)
			d, err := barrier.NewDouble(dir, 1)
			if err != nil {
				t.Fatal(err)
			}
			p, err := sim.Run(w, 0, d.Enter())
			if err != nil {
				t.Fatal(err)
			}
			mustDo(t, w, p.Leave())
			mustDo(t, w, task.Delete(dir+"/"+barrier.ReadyNode, task.AnyVersion))
			mustDo(t, w, task.Delete(dir, task.AnyVersion))
		})
	})
}

func newMemWorld(t *testing.T) *sim.World {
	t.Helper()
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, err := range w.Errs {
			t.Errorf("detached flow failed: %v", err)
		}
		w.Close()
	})
	return w
}

func mustDo(t *testing.T, w *sim.World, tk task.Task[task.Unit]) {
	t.Helper()
	if _, err := sim.Run(w, 0, tk); err != nil {
		t.Fatal(err)
	}
}

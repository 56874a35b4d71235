package masterworker_test

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/memcheck"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// A long-lived system's memory is flat however many tasks go through
// it: memcheck.Cycles cycles leave the live scope count under the
// session scopes where it was after the warm-up and the live heap within
// memcheck.Bound of it. A cycle is one task's life with a master and a
// worker running: the client submits it and waits for its status, the
// primary assigns it (its /tasks watch fired by the submission), the
// worker executes it (its assignment watch fired by the move) and writes
// the status, the client reads the status, then deletes it. The master,
// the worker and the client run on three sessions (apart) or on one
// (together); the scopes of every session are counted, so the master's
// term and the worker's run, which live through every cycle, are in the
// baseline, and what is measured is that their rounds, like the client's
// calls, leave nothing behind.
//
// The recipe keeps every status until someone deletes it (it has no
// clean-up of its own: a client may read a status at any time), so
// without the cycle's delete the server holds one node per task (650
// bytes a cycle in fakezk, measured).
func TestMemoryFlatSubmitExecute(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		master, worker, client int
	}{{"apart", 0, 1, 2}, {"together", 0, 0, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 3, nil)
			sys := newSys(t, "/mem/mw")
			m, err := sys.Master("m")
			if err != nil {
				t.Fatal(err)
			}
			wk, err := sys.Worker("w", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
			if err != nil {
				t.Fatal(err)
			}
			mo := sim.Submit(w, tc.master, m.Run())
			wo := sim.Submit(w, tc.worker, wk.Run())
			if !w.Settle(func() bool { return m.Primary() && wk.Registered() }) {
				t.Fatalf("primary %v, registered %v", m.Primary(), wk.Registered())
			}
			scopes := func() int {
				n := 0
				for _, ex := range w.Execs {
					n += ex.SessionScope().Descendants()
				}
				return n
			}
			memcheck.Check(t, scopes, func(i int) {
				data := strconv.AppendInt(nil, int64(i), 10)
				name, err := sim.Run(w, tc.client, sys.Submit("c"+strconv.Itoa(i), data))
				if err != nil {
					t.Fatal(err)
				}
				res, err := sim.Run(w, tc.client, sys.Wait(name))
				if err != nil || res.Err() != nil || !bytes.Equal(res.Data, data) {
					t.Fatalf("task %s: %+v, %v", name, res, err)
				}
				if _, err := sim.Run(w, tc.client, task.Delete(sys.StatusPath(name), task.AnyVersion)); err != nil {
					t.Fatal(err)
				}
				w.Drive() // the master's and the worker's next rounds
			})
			if mo.Done || wo.Done {
				t.Fatalf("master ended %v (%v), worker ended %v (%v)", mo.Done, mo.Err, wo.Done, wo.Err)
			}
			if _, assigned, _ := m.Stats(); assigned != memcheck.Warm+memcheck.Cycles || wk.Completed() != assigned {
				t.Fatalf("assigned %d, completed %d", assigned, wk.Completed())
			}
			for _, err := range w.Errs {
				t.Errorf("detached flow failed: %v", err)
			}
		})
	}
}

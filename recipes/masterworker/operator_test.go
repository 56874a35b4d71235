package masterworker_test

import (
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// An operator deletes a worker's registration (the simulation's
// masterworker seed 631: every worker's registration deleted, the master
// sees no worker and assigns nothing). The worker notices and registers
// again, and the master sees it: a task submitted afterwards gets its
// status. If the operator creates a node at the registration's path again
// (an ephemeral of the operator's own session, or a persistent node), the
// worker waits for that node to go, then registers again; meanwhile the
// master takes that node for the worker's and assigns to it, and the
// worker runs what is assigned.
func TestWorkerRegistersAgainAfterOperatorDelete(t *testing.T) {
	for _, again := range []string{"none", "ephemeral", "persistent"} {
		t.Run(again, func(t *testing.T) {
			w := newWorld(t, 3, nil)
			sys := newSys(t, "/mw")
			m, _ := sys.Master("m")
			handler := func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) }
			wk, _ := sys.Worker("w1", handler)
			mo := sim.Submit(w, 0, m.Run())
			wo := sim.Submit(w, 1, wk.Run())
			w.Drive()
			if !m.Primary() || !wk.Registered() {
				t.Fatalf("primary %v, registered %v", m.Primary(), wk.Registered())
			}
			reg := sys.WorkersPath() + "/w1"
			ours := func() bool {
				st, ok := w.Server.NodeStat(reg)
				return ok && st.EphemeralOwner == w.Conns[1].SessionID()
			}
			submit := func(id string) *sim.Outcome[masterworker.Result] {
				o := &sim.Outcome[masterworker.Result]{}
				executor.SubmitWith(w.Execs[2], c.Then(sys.Submit(id, []byte(id)), sys.Wait),
					executor.Options{Deadline: w.Clock.Now().Add(time.Minute)},
					func(r masterworker.Result, err error) { o.V, o.Err, o.Done = r, err, true })
				return o
			}
			if err := w.Server.AdminDelete(reg); err != nil {
				t.Fatal(err)
			}
			switch again {
			case "ephemeral":
				if err := w.Server.AdminCreate(reg, []byte("operator"), w.Server.OrphanSession(w.Timeout())); err != nil {
					t.Fatal(err)
				}
			case "persistent":
				if err := w.Server.AdminCreate(reg, []byte("operator"), 0); err != nil {
					t.Fatal(err)
				}
			}
			if again != "none" {
				// The operator's node stands for the worker: a task goes
				// through meanwhile.
				o := submit("c_before")
				w.Settle(func() bool { return o.Done })
				if !o.Done || o.Err != nil || string(o.V.Data) != "c_before" {
					t.Fatalf("task while the operator's node is up: %+v", o)
				}
				if ours() || wk.Registered() {
					t.Fatalf("the worker took the operator's node for its registration")
				}
				if again == "persistent" {
					if err := w.Server.AdminDelete(reg); err != nil {
						t.Fatal(err)
					}
				}
			}
			if !w.Settle(func() bool { return ours() && wk.Registered() }) {
				t.Fatalf("the worker did not register again: registered %v, node ours %v", wk.Registered(), ours())
			}
			o := submit("c_after")
			w.Settle(func() bool { return o.Done })
			if !o.Done || o.Err != nil || string(o.V.Data) != "c_after" {
				t.Fatalf("task after the worker registered again: %+v", o)
			}
			if mo.Done || wo.Done {
				t.Fatalf("master or worker ended: %+v %+v", mo, wo)
			}
		})
	}
}

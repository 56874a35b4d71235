package sim_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// OperatorDeleteNow: in a seed whose plan has the Operator class, the
// scenario has an operator delete /d/n just after client 0 sent the read
// that follows its create: the node is gone and not made again, the fault
// is noted (aimed by the scenario) and counted, and World.Operated knows
// of it. It refuses a node with children, one that is gone, and a plan
// without the class.
func TestOperatorDeleteNow(t *testing.T) {
	type tally struct{ plans, aimed, gone, known int }
	var tl tally
	var r *sim.Trial
	var got bool
	sc := sim.Scenario{
		Name:     "operatornow",
		Clients:  1,
		Faults:   sim.Faults{Allow: sim.Of(sim.Operator, sim.Delay), MaxRate: 1e-12}, // the injector's: never in practice
		Operator: []string{"/d/"},
		Duration: 3 * time.Second,
		Wrap: func(i int, c *fakezk.Conn) task.Conn {
			return sim.AfterSend(c, func(req task.Request) {
				if e, ok := req.(*task.ExistsRequest); !ok || e.Path != "/d/n" || r == nil || got {
					return
				}
				_, st, _ := r.NodeData("/d/n")
				if r.OperatorDeleteNow("/d") {
					r.Errorf("OperatorDeleteNow deleted /d, which has a child")
				}
				if got = r.OperatorDeleteNow("/d/n"); !got {
					return
				}
				tl.aimed++
				if _, ok := r.NodeStat("/d/n"); !ok {
					tl.gone++
				}
				if r.Operated("/d/n", st.Czxid, r.Clock.Now()) {
					tl.known++
				}
				if r.OperatorDeleteNow("/d/n") {
					r.Errorf("OperatorDeleteNow deleted /d/n twice")
				}
			})
		},
		Setup: func(tr *sim.Trial) error {
			r, got = tr, false
			_, err := sim.Run(tr.World, 0, task.Create("/d", nil, task.Persistent))
			return err
		},
		Workload: func(r *sim.Trial) {
			r.Go(0, func(a *sim.Actor) {
				_ = a.Sleep(a.Context(), 100*time.Millisecond)
				if _, err := executor.Await(a.Context(), a.Exec(), task.Create("/d/n", nil, task.Persistent)); err != nil {
					r.Errorf("create: %v", err)
				}
				_, _ = executor.Await(a.Context(), a.Exec(), task.Exists("/d/n"))
				if on := r.Plan.On.Has(sim.Operator); got != on {
					r.Errorf("OperatorDeleteNow = %v with the Operator class %v in the plan", got, on)
				}
				for !r.Stopping() && a.Context().Err() == nil {
					r.Progress(0)
					_ = a.Sleep(a.Context(), 50*time.Millisecond)
				}
			})
		},
	}
	const seeds = 40
	tl.plans = aimedSeeds(t, sc, seeds, sim.Operator, func(p sim.Plan) bool { return p.On.Has(sim.Operator) }, one)
	t.Logf("%d of %d seeds with the Operator class: %d aimed, %d nodes gone, %d known to Operated", tl.plans, seeds, tl.aimed, tl.gone, tl.known)
	if tl.plans == 0 || tl.plans == seeds || tl.aimed != tl.plans || tl.gone != tl.aimed || tl.known != tl.aimed {
		t.Errorf("want some seeds with the class and some without, each of those aimed, the node gone, and Operated knowing of it")
	}
}

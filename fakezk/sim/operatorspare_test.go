package sim_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// Scenario.OperatorSpare: the operator deletes the leaves under its
// paths but never a spared one, though it is a leaf under them; without
// the spare it deletes that one too (the same scenario, the same seeds).
func TestOperatorSpare(t *testing.T) {
	for _, spare := range []bool{false, true} {
		deleted := 0
		sc := sim.Scenario{
			Name:     "operatorspare",
			Clients:  1,
			Faults:   sim.Faults{Allow: sim.Of(sim.Operator), MaxRate: 0.05},
			Operator: []string{"/d/"},
			Duration: 3 * time.Second,
			Setup: func(tr *sim.Trial) error {
				for _, p := range []string{"/d", "/d/a", "/d/keep"} {
					if _, err := sim.Run(tr.World, 0, task.Create(p, nil, task.Persistent)); err != nil {
						return err
					}
				}
				return nil
			},
			Workload: func(r *sim.Trial) {
				r.Go(0, func(a *sim.Actor) {
					for !r.Stopping() && a.Context().Err() == nil {
						if _, ok := r.NodeStat("/d/keep"); !ok {
							deleted++
							_, _ = executor.Await(a.Context(), a.Exec(), task.Create("/d/keep", nil, task.Persistent))
						}
						if _, ok := r.NodeStat("/d/a"); !ok {
							_, _ = executor.Await(a.Context(), a.Exec(), task.Create("/d/a", nil, task.Persistent))
						}
						r.Progress(0)
						_ = a.Sleep(a.Context(), 20*time.Millisecond)
					}
				})
			},
		}
		if spare {
			sc.OperatorSpare = []string{"/d/keep"}
		}
		st := sim.Check(t, sc, 30)
		if st.Failures() > 0 {
			return
		}
		t.Logf("spare %v: /d/keep found deleted %d times", spare, deleted)
		if spare != (deleted == 0) {
			t.Errorf("spare %v: /d/keep deleted %d times", spare, deleted)
		}
	}
}

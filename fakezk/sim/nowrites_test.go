package sim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// The operator writes the Operator leaves (OperatorWrites) but never
// those under OperatorNoWrites, which it still deletes.
func TestOperatorNoWrites(t *testing.T) {
	sc := sim.Scenario{
		Name:             "nowrites",
		Clients:          1,
		Faults:           sim.Faults{Allow: sim.Of(sim.Operator), MaxRate: 0.2},
		Duration:         5 * time.Second,
		Operator:         []string{"/a", "/b"},
		OperatorWrites:   true,
		OperatorNoWrites: []string{"/b/"},
		Live:             func(*sim.Trial) bool { return true }, // nothing to progress
		Setup: func(r *sim.Trial) error {
			return makeDirs(r, "/a", "/b")
		},
		Workload: func(r *sim.Trial) {
			// Leaves for the operator, made again as it deletes them.
			r.Go(0, func(a *sim.Actor) {
				for i := 0; a.Context().Err() == nil; i++ {
					for _, dir := range []string{"/a", "/b"} {
						_, _ = executor.Await(a.Context(), a.Exec(), task.Create(dir+"/n", nil, task.Persistent))
					}
					if a.Sleep(a.Context(), 10*time.Millisecond) != nil {
						return
					}
				}
			})
		},
	}
	wroteA, deletedB := 0, 0
	for seed := uint64(1); seed <= 20; seed++ {
		res := sim.RunSeed(sc, seed, false)
		if res.Err != nil {
			t.Fatalf("seed %d: %v", seed, res.Err)
		}
		for _, f := range res.Faults {
			switch {
			case strings.Contains(f, "wrote /b/"):
				t.Fatalf("seed %d: %s: the operator wrote a node under OperatorNoWrites", seed, f)
			case strings.Contains(f, "wrote /a/"):
				wroteA++
			case strings.Contains(f, "deleted /b/"):
				deletedB++
			}
		}
	}
	if wroteA == 0 || deletedB == 0 {
		t.Fatalf("the operator wrote /a/n %d times and deleted /b/n %d times over 20 seeds: the test sees nothing", wroteA, deletedB)
	}
	t.Logf("writes under /a: %d; deletes under /b: %d", wroteA, deletedB)
}

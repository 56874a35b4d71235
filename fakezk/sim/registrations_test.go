package sim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// Registrations fails a registration that stays registered on the
// session before an expiry, and passes one that follows its executor's
// session.
func TestRegistrations(t *testing.T) {
	scenario := func(g *sim.Registrations, liar bool) sim.Scenario {
		return sim.Scenario{
			Name:     "registrations",
			Clients:  2,
			Faults:   sim.Faults{Allow: sim.Of(sim.Expire), MaxRate: 0.05},
			Duration: 10 * time.Second,
			Workload: func(r *sim.Trial) {
				for i := range 2 {
					g.Start(r, i)
					ex := r.Execs[i]
					first := ex.SessionScope().Session()
					sess := func() task.Session { return ex.SessionScope().Session() }
					if liar { // registered on its first session, forever
						sess = func() task.Session { return first }
					}
					g.Hold(r, i, r.Incarnation(i), sim.Registered{Name: "r", Registered: func() bool { return true }, Session: sess, Done: make(chan struct{})})
					var tick func() // time passes, and the client makes progress
					tick = func() {
						r.Progress(i)
						if !r.Stopping() {
							sim.After(r, ex, 100*time.Millisecond, tick)
						}
					}
					tick()
				}
			},
			Invariants: []sim.Invariant{sim.InvariantFunc(g.Check)},
		}
	}
	var honest, liar sim.Registrations
	caught := false
	for seed := uint64(1); seed <= 20; seed++ {
		if res := sim.RunSeed(scenario(&honest, false), seed, false); res.Err != nil {
			t.Fatalf("seed %d: a registration on its executor's session failed: %v", seed, res.Err)
		}
		if res := sim.RunSeed(scenario(&liar, true), seed, false); res.Err != nil {
			if !strings.Contains(res.Err.Error(), "Registered() true on session 1") {
				t.Fatalf("seed %d: %v", seed, res.Err)
			}
			caught = true
		}
	}
	if honest.Seen == 0 || honest.Expiries == 0 {
		t.Fatalf("honest: %d looks, %d expiries: the test judges nothing", honest.Seen, honest.Expiries)
	}
	if !caught {
		t.Fatal("a registration kept across expiries passed 20 seeds")
	}
}

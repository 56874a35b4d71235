package sim_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// ACLNow: in a seed whose plan has the ACL class, the scenario closes a
// node of Scenario.ACL at a moment of its own choosing: a create under
// it is refused at once, ACLsOpen says so, the fault is noted in the log
// (aimed by the scenario) and counted, and the operator puts the old ACL
// back after the while asked for, when the create goes through again.
// It is refused for a path outside Scenario.ACL, for one whose ACL is
// changed already, and in a plan without the class.
func TestACLNow(t *testing.T) {
	type tally struct{ plans, aimed, refused, reopened int }
	var tl tally
	const d = 700 * time.Millisecond
	sc := sim.Scenario{
		Name:     "aclnow",
		Clients:  1,
		Faults:   sim.Faults{Allow: sim.Of(sim.ACL), MaxRate: 1e-12}, // the injector's: never in practice
		ACL:      []string{"/d"},
		Duration: 3 * time.Second,
		Setup: func(r *sim.Trial) error {
			return makeDirs(r, "/d", "/e")
		},
		Workload: func(r *sim.Trial) {
			r.Go(0, func(a *sim.Actor) {
				create := func(dir string) error {
					_, err := executor.Await(a.Context(), a.Exec(), task.Create(dir+"/n", nil, task.EphemeralSequential))
					return err
				}
				_ = a.Sleep(a.Context(), 100*time.Millisecond)
				if r.ACLNow("/e", false, d) {
					r.Errorf("ACLNow closed /e, outside Scenario.ACL")
				}
				on := r.Plan.ACLRate > 0
				got := r.ACLNow("/d", a.Rand().IntN(2) == 0, d)
				if got != on {
					r.Errorf("ACLNow = %v with the ACL class %v in the plan", got, on)
				}
				if got {
					tl.aimed++
					if r.ACLNow("/d", false, d) {
						r.Errorf("ACLNow closed /d twice")
					}
					if _, open := r.ACLsOpen(); open {
						r.Errorf("ACLsOpen says open just after ACLNow")
					}
					if err := create("/d"); errors.Is(err, task.ErrNoAuth) {
						tl.refused++
					} else {
						r.Errorf("create under /d just closed: %v, want task.ErrNoAuth", err)
					}
					_ = a.Sleep(a.Context(), d)
					if _, open := r.ACLsOpen(); !open {
						r.Errorf("ACLsOpen says closed once the while asked for is over")
					}
				}
				for !r.Stopping() && a.Context().Err() == nil {
					switch err := create("/d"); {
					case err == nil:
						if got {
							tl.reopened++
							got = false
						}
						r.Progress(0)
					case !task.IsRetryable(err):
						r.Errorf("create under /d: %v", err)
					}
					_ = a.Sleep(a.Context(), 50*time.Millisecond)
				}
			})
		},
	}
	const seeds = 40
	tl.plans = aimedSeeds(t, sc, seeds, sim.ACL, func(p sim.Plan) bool { return p.ACLRate > 0 }, one)
	t.Logf("%d of %d seeds with the ACL class: %d aimed, %d creates refused, %d created again after", tl.plans, seeds, tl.aimed, tl.refused, tl.reopened)
	if tl.plans == 0 || tl.plans == seeds || tl.aimed != tl.plans || tl.refused != tl.aimed || tl.reopened != tl.aimed {
		t.Errorf("want some seeds with the class and some without, each of those aimed and refused, and creating again after")
	}
}

// aimedSeeds runs seeds 1 to seeds of sc and checks each seed's aimed
// faults: in a seed whose plan has the class (inPlan), want(plan) faults
// noted as aimed by the scenario and one fault of class counted; in the
// others, none of either. It returns how many seeds had the class.
func aimedSeeds(t *testing.T, sc sim.Scenario, seeds uint64, class sim.FaultClass, inPlan func(sim.Plan) bool, want func(sim.Plan) int) int {
	t.Helper()
	plans := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		res := sim.RunSeed(sc, seed, false)
		if res.Err != nil {
			t.Fatalf("seed %d: %v", seed, res.Err)
		}
		aimed, wantAimed, wantFired := aimedNotes(res), 0, 0
		if inPlan(res.Plan) {
			plans++
			wantAimed, wantFired = want(res.Plan), 1
		}
		if aimed != wantAimed || res.FiredOf(class) != wantFired {
			t.Errorf("seed %d: %d aimed faults noted, %d %s faults counted; want %d and %d: %v", seed, aimed, res.FiredOf(class), class, wantAimed, wantFired, res.Faults)
		}
	}
	return plans
}

// one is aimedSeeds' want for a class aimed once a seed.
func one(sim.Plan) int { return 1 }

// aimedNotes counts the faults a seed's log notes as aimed by its
// scenario (Trial.ACLNow, DelayNow, RestartNow, ExpireNow and the lag of
// its next session).
func aimedNotes(res sim.Result) int {
	n := 0
	for _, f := range res.Faults {
		if strings.Contains(f, "aimed by the scenario)") {
			n++
		}
	}
	return n
}

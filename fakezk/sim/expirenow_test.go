package sim_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
)

// ExpireNow: in a seed whose plan has the Expire class, the scenario
// expires client 0's session: the client comes back on a new session,
// the fault is noted (aimed by the scenario) and counted, and, in a seed
// that draws the lag at a new session (the Lag class), that session
// starts on a lagging member. It is refused in a plan without the class.
func TestExpireNow(t *testing.T) {
	type tally struct{ plans, aimed, renewed, lagPlans, lagged int }
	var tl tally
	sc := sim.Scenario{
		Name:     "expirenow",
		Clients:  2,
		Faults:   sim.Faults{Allow: sim.Of(sim.Expire, sim.Delay, sim.Lag), MaxRate: 1e-12}, // the injector's: never in practice
		Duration: 3 * time.Second,
		Workload: func(r *sim.Trial) {
			r.Go(0, func(a *sim.Actor) {
				_ = a.Sleep(a.Context(), 100*time.Millisecond)
				old := r.Conns[0].SessionID()
				got := r.ExpireNow(0, time.Minute, true)
				if on := r.Plan.On.Has(sim.Expire); got != on {
					r.Errorf("ExpireNow = %v with the Expire class %v in the plan", got, on)
				}
				if got {
					tl.aimed++
					for a.Context().Err() == nil && (r.Conns[0].SessionID() == old || r.Conns[0].SessionID() == 0) {
						_ = a.Sleep(a.Context(), 10*time.Millisecond)
					}
					if sid := r.Conns[0].SessionID(); sid != old && sid != 0 {
						tl.renewed++
						if lagging, _ := r.Conns[0].Lagging(); lagging {
							tl.lagged++
						}
					}
				}
				for !r.Stopping() && a.Context().Err() == nil {
					r.Progress(0)
					r.Progress(1)
					_ = a.Sleep(a.Context(), 50*time.Millisecond)
				}
			})
		},
	}
	const seeds = 40
	tl.plans = aimedSeeds(t, sc, seeds, sim.Expire, func(p sim.Plan) bool { return p.On.Has(sim.Expire) }, func(p sim.Plan) int {
		if p.On.Has(sim.Lag) {
			tl.lagPlans++
			return 2 // the expiry and its next session's lag
		}
		return 1
	})
	t.Logf("%d of %d seeds with the Expire class (%d with the Lag class): %d aimed, %d on a new session, %d of them lagging", tl.plans, seeds, tl.lagPlans, tl.aimed, tl.renewed, tl.lagged)
	if tl.plans == 0 || tl.plans == seeds || tl.aimed != tl.plans || tl.renewed != tl.aimed || tl.lagPlans == 0 || tl.lagged != tl.lagPlans {
		t.Errorf("want some seeds with the class and some without, each of those aimed and on a new session, lagging where the plan has the Lag class")
	}
}

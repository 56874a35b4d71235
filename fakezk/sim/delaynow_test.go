package sim_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// DelayNow: in a seed whose plan has the Delay class, the scenario holds
// a client's deliveries at a moment of its own choosing: a read's answer
// comes no sooner than the while asked for, the fault is noted in the
// log (aimed by the scenario) and counted. It is refused in a plan
// without the class, for a while that is not positive, and once the
// faults have stopped.
func TestDelayNow(t *testing.T) {
	type tally struct{ plans, aimed, held int }
	var tl tally
	const d = 700 * time.Millisecond
	sc := sim.Scenario{
		Name:     "delaynow",
		Clients:  1,
		Faults:   sim.Faults{Allow: sim.Of(sim.Delay, sim.DropUnapplied), MaxRate: 1e-12}, // the injector's: never in practice
		Duration: 3 * time.Second,
		Workload: func(r *sim.Trial) {
			r.Go(0, func(a *sim.Actor) {
				read := func() error {
					_, err := executor.Await(a.Context(), a.Exec(), task.Exists("/"))
					return err
				}
				_ = a.Sleep(a.Context(), 100*time.Millisecond)
				if r.DelayNow(0, 0) {
					r.Errorf("DelayNow held the deliveries for no while")
				}
				on := r.Plan.On.Has(sim.Delay)
				from := r.Clock.Now()
				got := r.DelayNow(0, d)
				if got != on {
					r.Errorf("DelayNow = %v with the Delay class %v in the plan", got, on)
				}
				if err := read(); err != nil {
					r.Errorf("read: %v", err)
				}
				took := r.Clock.Now().Sub(from)
				switch {
				case got && took < d:
					r.Errorf("the read's answer came %s after DelayNow(%s)", took, d)
				case got:
					tl.aimed++
					tl.held++
				case took >= d:
					r.Errorf("the read's answer took %s with no delay", took)
				}
				for !r.Stopping() && a.Context().Err() == nil {
					if err := read(); err == nil {
						r.Progress(0)
					}
					_ = a.Sleep(a.Context(), 50*time.Millisecond)
				}
				if !r.FaultsOn() && r.DelayNow(0, d) {
					r.Errorf("DelayNow held the deliveries after the faults stopped")
				}
			})
		},
	}
	const seeds = 40
	tl.plans = aimedSeeds(t, sc, seeds, sim.Delay, func(p sim.Plan) bool { return p.On.Has(sim.Delay) }, one)
	t.Logf("%d of %d seeds with the Delay class: %d aimed, %d reads held", tl.plans, seeds, tl.aimed, tl.held)
	if tl.plans == 0 || tl.plans == seeds || tl.aimed != tl.plans || tl.held != tl.aimed {
		t.Errorf("want some seeds with the class and some without, each of those aimed and its read held")
	}
}

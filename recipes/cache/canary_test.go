package cache

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
)

// canaryBound is the most seeds a canary may survive in each of
// canaryHunts disjoint seed ranges.
const (
	canaryBound = 300
	canaryHunts = 3
)

// The simulation passes with every known bug off.
func TestSimulation(t *testing.T) {
	s, sc := newCacheSim()
	st := sim.Check(t, sc, simSeeds())
	t.Logf("over %d seeds: %d OnEvents, %d Nexts, %d re-created nodes reported by Next", st.Seeds, s.events, s.nexts, s.recreated)
	if !t.Failed() && s.recreated == 0 {
		t.Errorf("no seed reported a re-created node: the scenario does not exercise czxid comparison")
	}
}

// The seeds that once failed (Scenario.Regressions), on every unit run.
func TestSimRegressions(t *testing.T) {
	_, sc := newCacheSim()
	sim.Regressions(t, sc)
}

// Each known bug, switched back on, is caught by the simulation; sim.Catch
// logs the seeds each hunt needed for the first catch.
func TestCanaries(t *testing.T) {
	for _, name := range []canary.Name{bugVersionOnly, bugNoRearmAfterLoss, bugNoResync, bugRecursiveNoReread, bugRecursiveCreatedIsNew, bugStaleParentStat, bugNoRelistSaturated} {
		t.Run(string(name), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			_, sc := newCacheSim()
			sim.Catch(t, sc, string(name), canaryHunts, canaryBound)
		})
	}
}

// The same seed gives the same history (server trace, faults, outcome).
func TestSimDeterminism(t *testing.T) {
	_, sc := newCacheSim()
	sim.Determinism(t, sc, sim.Sample(5, 200))
}

// The large run of make sim: SIM_SEEDS seeds (skipped when unset).
func TestSimExplore(t *testing.T) {
	_, sc := newCacheSim()
	sim.Explore(t, sc)
}

package wiresim_test

import (
	"flag"
	"testing"

	"github.com/zkflow/zkflow/internal/wiresim"
)

// TestSimWire runs a few seeds of every wire scenario (the unit run's
// share; make sim runs thousands with TestSimExplore), and checks that
// they exercised what they judge: every fault class fired, and each
// judge had work to look at (critical sections logged, IDs handed out,
// items acknowledged, leaders' terms logged).
func TestSimWire(t *testing.T) {
	var fired [len(wiresim.Stats{}.Fired)]int
	counts := map[string]int{}
	ran := 0
	for _, sc := range scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			ran++
			st := wiresim.Check(t, sc, 16)
			for c := range fired {
				fired[c] += st.Fired[c]
			}
			for k, v := range st.Counts {
				counts[k] += v
			}
		})
	}
	if t.Failed() || ran < len(scenarios()) || flag.Lookup("wiresim.seed").Value.String() != "0" {
		return // -run picked some scenarios, or -wiresim.seed one seed
	}
	for c, n := range fired {
		if n == 0 {
			t.Errorf("no %v fault fired in the seeds of every scenario", wiresim.Class(c))
		}
	}
	for _, k := range []string{"sections", "ids", "acks", "terms"} {
		if counts[k] == 0 {
			t.Errorf("nothing counted as %s: the judge had nothing to judge", k)
		}
	}
}

// TestSimExplore is the large run of make sim: SIM_WIRE_SEEDS seeds of
// each range per scenario, skipped when unset.
func TestSimExplore(t *testing.T) { wiresim.Explore(t, scenarios()...) }

func scenarios() []wiresim.Scenario {
	return []wiresim.Scenario{lockScenario(), seqidScenario(), queueScenario(), electionScenario()}
}

package wiresim_test

import (
	"testing"

	"github.com/zkflow/zkflow/internal/wiresim"
)

// TestSimWire runs a few seeds of every wire scenario (the unit run's
// share; make sim runs thousands with TestSimExplore).
func TestSimWire(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.Name, func(t *testing.T) { wiresim.Check(t, sc, 16) })
	}
}

// TestSimExplore is the large run of make sim: SIM_WIRE_SEEDS seeds of
// each range per scenario, skipped when unset.
func TestSimExplore(t *testing.T) { wiresim.Explore(t, scenarios()...) }

func scenarios() []wiresim.Scenario {
	return []wiresim.Scenario{lockScenario(), seqidScenario(), queueScenario()}
}

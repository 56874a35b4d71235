package barrier_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
)

// canaryBound is the most seeds a canary may survive: each known bug must
// be caught by the simulation within this many seeds, in each of
// canaryHunts disjoint seed ranges.
const (
	canaryBound = 500
	canaryHunts = 3
)

// Each known bug, switched back on, is caught by the simulation. The
// canary names are the package's own (barrier.go, double.go); sim.Catch
// logs the seeds each hunt needed for the first catch.
func TestCanaries(t *testing.T) {
	cases := []struct {
		name canary.Name
		sc   func() sim.Scenario
	}{
		{"barrier/trust-event", func() sim.Scenario { _, sc := newBarrierSim(); return sc }},
		{"barrier/loss-as-gone", func() sim.Scenario { _, sc := newBarrierSim(); return sc }},
		// Through a member that lags and answers a watched read from
		// its view (sim.Lag, Scenario.LagWatched).
		{"barrier/wait-without-sync", func() sim.Scenario { _, sc := newBarrierSim(); return sc }},
		{"barrier/double-blind-create", func() sim.Scenario { _, sc := newDoubleSim(); return sc }},
		{"barrier/double-leave-trusts-event", func() sim.Scenario { _, sc := newDoubleSim(); return sc }},
		// Caught by the count of participant nodes there at once
		// (Presence) where the count of Enters started is fooled.
		{"barrier/double-enter-by-sequence", func() sim.Scenario { _, sc := newDoubleSim(); return sc }},
	}
	for _, tc := range cases {
		t.Run(string(tc.name), func(t *testing.T) {
			restore := canary.Enable(tc.name)
			defer restore()
			sim.Catch(t, tc.sc(), string(tc.name), canaryHunts, canaryBound)
		})
	}
}

package group_test

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
// canary names are the package's own (member.go, view.go); sim.Catch logs
// the seeds each hunt needed for the first catch.
func TestCanaries(t *testing.T) {
	for _, name := range []canary.Name{
		"group/member-no-reregister",
		"group/join-cleanup-after-success",
		"group/view-no-rearm-after-expiry",
		"group/view-stale-list",
		"group/view-merged-list",
		// Through a member that lags and answers the view's watched
		// listing from its view (sim.Lag, Scenario.LagWatched).
		"group/view-list-without-sync",
	} {
		t.Run(string(name), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			_, sc := newGroupSim()
			sim.Catch(t, sc, string(name), canaryHunts, canaryBound)
		})
	}
}

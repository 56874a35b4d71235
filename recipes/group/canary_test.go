package group_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
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
		"group/settle-takes-over",
		// Caught at Join's outcome: the node at its path is another
		// session's (groupSim.owns).
		"group/settle-any-owner",
	} {
		t.Run(string(name), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			_, sc := newGroupSim()
			sim.Catch(t, sc, string(name), canaryHunts, canaryBound)
		})
	}
}

// A Leave's delete sent again after its reply was lost, at the version a
// read gave through a member that had not applied the first one (the read
// without its sync: zkops.BugNoSyncAfterLostDelete), deletes the node the
// other member of the id made meanwhile: the shared-id scenario's journal
// judge (Scenario.OwnDeletes) catches it.
func TestCanarySharedIDNoSyncAfterLostDelete(t *testing.T) {
	restore := canary.Enable(zkops.BugNoSyncAfterLostDelete)
	defer restore()
	_, sc := newSharedSim()
	sim.Catch(t, sc, string(zkops.BugNoSyncAfterLostDelete), canaryHunts, canaryBound)
}

// Two give-backs of one member node on one session, the second's read
// sent before the first's delete and answered after it, the node made
// again meanwhile by the other process of the id (version 0, as ours
// was): with the read acted on (zkops.BugDeleteOvertaken), the second
// delete takes that node, and the shared-id scenario's journal judge
// (Scenario.OwnDeletes) catches it. The scenario aims at it (aimConn,
// leaveTwice): drawn of itself, it came about once in 270,000 seeds.
func TestCanarySharedIDDeleteOvertaken(t *testing.T) {
	restore := canary.Enable(zkops.BugDeleteOvertaken)
	defer restore()
	_, sc := newSharedSim()
	sim.Catch(t, sc, string(zkops.BugDeleteOvertaken), canaryHunts, canaryBound)
}

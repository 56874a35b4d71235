package masterworker_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/masterworker"
)

// canaryBound is the most seeds a canary may survive, in each of
// canaryHunts disjoint seed ranges.
const (
	canaryBound = 500
	canaryHunts = 3
)

// Each known bug, switched back on, is caught by TestSimSafety's
// scenario; sim.Catch logs the seeds each hunt needed for the first
// catch:
//   - assign-two-ops: the instant check sees a task in /tasks and in an
//     assignment directory at once;
//   - submit-no-id: a create applied before a lost reply is made again,
//     and the duplicate gets a second status (or a submitter is told of a
//     task whose twin it never learns of);
//   - no-rearm-workers: after a failed re-read of /workers the primary
//     never learns of a worker's death, and the dead worker's tasks never
//     get a status (Quiesce fails);
//   - no-dir-again: /assign or /status deleted while empty ends the
//     primary's term or the worker, and a task never gets a status.
func TestCanaries(t *testing.T) {
	for _, name := range []canary.Name{masterworker.BugAssignTwoOps, masterworker.BugSubmitNoID, masterworker.BugNoRearmWorkers, masterworker.BugNoDirAgain} {
		t.Run(string(name), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			var tot simTotals
			sim.Catch(t, newMWScenario(&tot), string(name), canaryHunts, canaryBound)
		})
	}
}

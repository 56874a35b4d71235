package masterworker_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/masterworker"
)

// canaryBound is the most seeds a canary may survive, in each of
// canaryHunts disjoint seed ranges.
const (
	canaryBound = 500
	findBound   = 2000
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
//     primary's term or the worker, and a task never gets a status;
//   - find-without-sync: a submitter restarted onto a lagging member
//     lists the directories from before its predecessor's create and
//     submits the task again: it gets two statuses. Rarer than the
//     others (1 history in a few hundred: 107, 536 and 733 seeds in three
//     hunts), so its bound is findBound;
//   - canceled-handler-writes-status: a handler that stops its worker
//     (task.ErrCanceled) has a failed status written instead, which no
//     run of the handler gave (the judge of every status against the
//     outcomes of its task's handler runs);
//   - handler-session-error-keeps-worker: a handler that fails with
//     another session's expiry (one run in thirty-two) leaves its worker
//     registered while its session lives: the job never gets a status
//     (Quiesce fails);
//   - unfenced-moves: a primary whose lease is gone (deleted by an
//     operator, or by the next primary's multi) still moves tasks; the
//     journal's judge of the moves (fenceJudge) sees a move by a session
//     that holds no lease (11, 12 and 20 seeds in three hunts; no other
//     check sees it: a stale primary's move only makes work again).
func TestCanaries(t *testing.T) {
	bounds := map[canary.Name]int{
		masterworker.BugAssignTwoOps:                   canaryBound,
		masterworker.BugSubmitNoID:                     canaryBound,
		masterworker.BugNoRearmWorkers:                 canaryBound,
		masterworker.BugNoDirAgain:                     canaryBound,
		masterworker.BugFindWithoutSync:                findBound,
		masterworker.BugCanceledHandlerWritesStatus:    canaryBound,
		masterworker.BugHandlerSessionErrorKeepsWorker: canaryBound,
		masterworker.BugUnfencedMoves:                  canaryBound,
	}
	for _, name := range slices.Sorted(maps.Keys(bounds)) {
		t.Run(string(name), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			var tot simTotals
			sim.Catch(t, newMWScenario(&tot), string(name), canaryHunts, bounds[name])
		})
	}
}

// client-counter-only, switched on: a Client's submission ids are its id
// and a counter, so a submitter process started again makes the ids its
// predecessor made; a create of it lost with the connection sends Find
// looking for the id, which finds the predecessor's task, and Wait
// answers with that one's status. Caught by the blocking scenario.
func TestCanaryClientCounterOnly(t *testing.T) {
	defer canary.Enable(masterworker.BugClientCounterOnly)()
	var tot simTotals
	sim.Catch(t, newBlockingMWScenario(&tot), string(masterworker.BugClientCounterOnly), canaryHunts, canaryBound)
}

// executor/expiry-over-ended-context, switched on: a blocking call whose
// context ends as an expiry ends its flow returns the expiry, which
// AwaitAcrossExpiry promises its caller never sees. Caught by the blocking
// scenario's submitters, whose Submit and Wait contexts end at drawn
// points (Client.Wait returning task.ErrSessionExpired).
func TestCanaryExpiryOverEndedContext(t *testing.T) {
	const bug canary.Name = "executor/expiry-over-ended-context" // executor/flow.go
	defer canary.Enable(bug)()
	var tot simTotals
	sim.Catch(t, newBlockingMWScenario(&tot), string(bug), canaryHunts, canaryBound)
}

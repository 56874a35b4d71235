package masterworker

import "github.com/zkflow/zkflow/internal/canary"

// Known bugs the simulation must catch (see internal/canary); each is
// switched on only by the canary tests.
const (
	// bugAssignTwoOps assigns with two separate operations (create the
	// assignment, then delete the task) instead of one multi: for a while
	// the task is in /tasks and in /assign/<worker> at once.
	bugAssignTwoOps canary.Name = "masterworker/assign-two-ops"
	// bugSubmitNoID names submissions without the submitter's unique id
	// and answers a lost create reply by creating again: a create that was
	// applied leaves a duplicate task.
	bugSubmitNoID canary.Name = "masterworker/submit-no-id"
	// bugNoRearmWorkers: when re-reading /workers after its watch fired
	// fails with connection loss, the primary keeps its old list and sets
	// no new watch, so it never learns of later worker deaths (or
	// arrivals) and the dead workers' tasks are never reassigned.
	bugNoRearmWorkers canary.Name = "masterworker/no-rearm-workers"
)

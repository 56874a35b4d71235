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
	// bugNoRearmWorkers: once the session has been suspended (a
	// connection loss), the primary stops taking the updates of its
	// /workers follower, as a primary that does not re-arm its /workers
	// watch after connection loss would: it never learns of later worker
	// deaths (or arrivals), and the dead workers' tasks are never
	// reassigned.
	bugNoRearmWorkers canary.Name = "masterworker/no-rearm-workers"
	// bugNoDirAgain: /assign or /status deleted while empty (an operator
	// cleaning up) is not made again: the primary's term or the worker
	// fails on the missing directory, and the task never gets a status.
	bugNoDirAgain canary.Name = "masterworker/no-dir-again"
	// bugFindWithoutSync: Find lists the directories without a sync first,
	// so a member that lags behind the leader can answer from before the
	// task was created, and a Resubmit (or a Submit whose create reply was
	// lost) creates it again.
	bugFindWithoutSync canary.Name = "masterworker/find-without-sync"
	// bugClientCounterOnly: a Client's submission ids are its id and a
	// counter, as they once were: a Client made again with the id of one
	// before it (a process started again) makes the ids that one made,
	// and a submission whose reply was lost finds the old one's task and
	// answers with its status.
	bugClientCounterOnly canary.Name = "masterworker/client-counter-only"
	// bugCanceledHandlerWritesStatus: a handler that fails with
	// task.ErrCanceled has its failure written as the task's status,
	// where the doc says it stops the worker and leaves the job assigned.
	bugCanceledHandlerWritesStatus canary.Name = "masterworker/canceled-handler-writes-status"
	// bugWaitWatchesStatus: Wait sets its exists watch before it reads,
	// and again after the watch fires, on a status that exists then: each
	// Wait leaves a data watch on its status (never changed, never
	// deleted) on the server and the client until the session ends.
	bugWaitWatchesStatus canary.Name = "masterworker/wait-watches-status"
	// bugHandlerSessionErrorKeepsWorker: a worker whose handler fails with
	// task.ErrSessionExpired or task.ErrClosed of something else it uses
	// takes it for its own session's end and leaves its registration in
	// place while its session lives on: its job stays assigned to a
	// worker that no longer serves.
	bugHandlerSessionErrorKeepsWorker canary.Name = "masterworker/handler-session-error-keeps-worker"
	// bugUnfencedMoves: the primary's moves (assignments, moves back,
	// the failed status of a task too large to move) are plain multis,
	// with no check on its lease: a primary that lost mastership, cut
	// off or its lease deleted, still moves tasks. Nothing is in two
	// places (each move is still one multi), but a stale primary moves a
	// live worker's task back, and the work is done again.
	bugUnfencedMoves canary.Name = "masterworker/unfenced-moves"
)

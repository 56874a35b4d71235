package masterworker

// The canary names, for the external tests.
var (
	BugAssignTwoOps                   = bugAssignTwoOps
	BugSubmitNoID                     = bugSubmitNoID
	BugNoRearmWorkers                 = bugNoRearmWorkers
	BugNoDirAgain                     = bugNoDirAgain
	BugFindWithoutSync                = bugFindWithoutSync
	BugClientCounterOnly              = bugClientCounterOnly
	BugCanceledHandlerWritesStatus    = bugCanceledHandlerWritesStatus
	BugHandlerSessionErrorKeepsWorker = bugHandlerSessionErrorKeepsWorker
	BugWaitWatchesStatus              = bugWaitWatchesStatus
	BugUnfencedMoves                  = bugUnfencedMoves
)

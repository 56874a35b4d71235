package idpersist

import "github.com/zkflow/zkflow/internal/canary"

// Canaries are the known bugs of the package, for the canary test.
var Canaries = []canary.Name{bugPersistMod100, bugPassLimit, bugUnboundLimit, bugExhaustedCandidate}

// BlockingCanaries are the known bugs the blocking scenario hunts: the one
// only it reaches (idpersist/blocking: Serve with contexts that end), and
// two its ID judges catch as the task face's do.
var BlockingCanaries = []canary.Name{bugServeEndedOther, bugPassLimit, bugUnboundLimit}

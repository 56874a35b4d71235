package seqid

import "github.com/zkflow/zkflow/internal/canary"

// Canaries are the known bugs of the package, for the canary test.
var Canaries = []canary.Name{bugBlindWrite, bugLossNotApplied}

// Backoff is the wait after a BadVersion.
var Backoff = backoff

// NearVersionWrap starts the sequence node of a simulation's seed near
// the data version's wrap, on one seed in two.
var NearVersionWrap = nearVersionWrap

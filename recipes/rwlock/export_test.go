package rwlock

import "github.com/zkflow/zkflow/internal/canary"

// Canaries are the package's known bugs (rwlock.go), for the simulation's
// canary test in package rwlock_test.
var Canaries = []canary.Name{bugReaderPredOnly, bugWriterIgnoresReaders, bugReaderHoldsOnAnyWriter, bugStaleSession, bugWatchLowestWriter}

// WatchLowestWriter is a herd, not a safety bug: also caught by the watch
// layout of TestEachWaiterWatchesOneNode (TestHerdCanaryCaught).
const WatchLowestWriter = bugWatchLowestWriter

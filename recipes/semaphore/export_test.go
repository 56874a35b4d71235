package semaphore

import "github.com/zkflow/zkflow/internal/canary"

// Canaries are the package's known bugs (semaphore.go, lease.go), for the
// simulation's canary test in package semaphore_test.
var Canaries = []canary.Name{bugOneTooMany, bugNoInternalLock, bugStaleSession, bugKeepOnFailure, bugBusyKeepsLock}

package lock

import (
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/task"
)

// Canaries are the package's known bugs (lock.go), for the simulation's
// canary test in package lock_test.
var Canaries = []canary.Name{bugNoPrefix, bugWatchLowest, bugLossIsFailure, bugStaleSession, bugExhaustedSeq, bugHoldOnAnyPred,
	bugTryKeepsNode, bugTryHoldsAnywhere, bugMarkAtCreate, bugMarkOnWake}

// TryCanaries bite only when clients use TryAcquire (simOpts.try).
var TryCanaries = []canary.Name{bugTryKeepsNode, bugTryHoldsAnywhere}

// WrapCanary is the one that needs the directory's counter started near
// its end to bite.
const WrapCanary = bugExhaustedSeq

// The fast path's canaries (fast.go), each caught by its own history in
// fast_test.go.
const (
	FastNoDirWatch = bugFastNoDirWatch
)

// HoldOnAnyPred is also caught by its own history (TestMiddleWaiterCanaryCaught).
const HoldOnAnyPred = bugHoldOnAnyPred

// WatchedSessions is how many sessions of rt the fast path keeps
// directory state for (fast.go): zero once the executor has closed. Call
// it when rt runs nothing.
func WatchedSessions(rt task.Runtime) int { return len(sessionsOf(rt)) }

// The handoff's canaries (handoff.go), also caught by their own history
// in handoff_test.go.
const (
	MarkAtCreate = bugMarkAtCreate
	MarkOnWake   = bugMarkOnWake
)

// MarkData is what a holder that waited writes into its node.
var MarkData = markData

type listHandoff struct{}

func (listHandoff) apply(l *Lock) { l.listHandoff = true }

// WithListingHandoff gives the lock the handoff of before the mark: a
// waiter lists the directory once its predecessor goes, unless that was
// the head of its listing; no node is marked. For the benchmark and the
// request counts that compare the two.
func WithListingHandoff() Option { return listHandoff{} }

// KeepsHolders reports whether rt keeps a list of holders (held.go):
// false once the executor has closed. Call it when rt runs nothing.
func KeepsHolders(rt task.Runtime) bool { return holdersOf(rt).d != nil }

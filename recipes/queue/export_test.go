package queue

import "github.com/zkflow/zkflow/internal/canary"

// Canaries are the package's known bugs (queue.go), per mode, for the
// simulation's canary test in package queue_test.
var (
	AtMostOnceCanaries  = []canary.Name{bugDeleteNoNodeIsTaken, bugLossRetryIsTaken, bugNewestFirst, bugPutAtExhausted}
	AtLeastOnceCanaries = []canary.Name{bugTakeByDelete, bugAckUnchecked, bugNoReturn, bugAckLostIsDeliveryLost, bugPutAtExhausted, bugClaimless}
)

// BugEpochAnySession is the canary a seed of the simulation catches
// (TestCanaryEpochAnySession).
const BugEpochAnySession = bugEpochAnySession

// Parse is parse, for the name tests.
var Parse = parse

// Prefix is prefix, for the name tests.
var Prefix = prefix

// ItemCzxid is the incarnation an item was taken as, for the simulation's
// judges.
func ItemCzxid(it *Item) int64 { return it.czxid }

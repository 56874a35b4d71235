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

// ItemCzxid is the incarnation of the item its take read, for the
// simulation's judges. At least once it is not always the incarnation
// the take's move deleted: the move deletes by name and version, and an
// item returned to the queue since the read is back under its own name
// at version 0 (ItemCopy's czxid dates the move).
func ItemCzxid(it *Item) int64 { return it.czxid }

// ItemCopy is the path of the in-flight copy an at-least-once take made
// of the item ("" for an item taken at most once), for the simulation's
// judges.
func ItemCopy(it *Item) string {
	if it.cons == nil {
		return ""
	}
	return it.q.flight(it.cons.id, it.czxid, it.Name)
}

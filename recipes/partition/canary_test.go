package partition_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
)

// canaryBound is the most seeds a canary may survive: each known bug must
// be caught by the simulation within this many seeds, in each of
// canaryHunts disjoint seed ranges.
const (
	canaryBound = 300
	canaryHunts = 3
)

// Each known bug, switched back on, is caught by the simulation:
// partition/hold-at-create takes an item as soon as its lock node is
// made, without waiting for the contenders below it (the old owner) to
// go; partition/keep-holds-across-expiry keeps its holds after its
// session ended (their nodes went with it) and never takes them again;
// partition/queue-exhausted-sequence waits in an item's queue with a
// number the server can no longer order (its directory's counter ran
// out), so two contenders named with int32's maximum both hold the item
// once the holder goes; partition/fenced-after-give-up sends a write
// fenced by a hold its member has given up (the node still there until
// its delete is applied), and the late write is applied;
// partition/drop-forgets-reported forgets, when a session's end drops
// every hold, what the last report said was held, so the report after it
// lists nothing as Released (caught by the judge of each Change against
// the one before it). The three partition/leave-leaves-* canaries have a
// Leave succeed with a node of the member still on the server (a party
// node whose create's reply was lost, a lock node of a try that ended on
// an error, one of a hold given back or a try withdrawn whose delete an
// ACL refused): caught by the judge of each successful Leave
// (leftClean). partition/lost-keeps-hold keeps the hold whose fenced
// write's check an ACL refused (an operator closed the node to the
// member's reads): caught by the judge of each fenced write's outcome
// (judge.lostWhileHeld: the member still holds it), in 3 to 10 seeds over
// three hunts when added, none in 300 seeds without that judge.
// zkops/watch-removed-ends-hold (zkops.WatchNode taking a watch another
// user of the session removed for the end of the held node) is caught by
// the judge of a cause for every item given up (judge.causeless), under
// the remove-watches fault class.
func TestCanaries(t *testing.T) {
	huntEach(t, func() sim.Scenario { _, sc := newPartSim(); return sc },
		"partition/hold-at-create",
		"partition/keep-holds-across-expiry",
		"partition/acquired-while-draining",
		"partition/queue-exhausted-sequence",
		"partition/fenced-after-give-up",
		"partition/drop-forgets-reported",
		"partition/leave-leaves-party-create",
		"partition/leave-leaves-failed-try",
		"partition/leave-leaves-refused-delete",
		"partition/lost-keeps-hold",
		"zkops/watch-removed-ends-hold",
	)
}

// The three partition/leave-leaves-* canaries through the blocking face
// (partition/blocking): caught by its judge of each successful Leave (a
// Client.Leave that returned nil, or the Leave that finds done the
// give-up of one whose context ended first), where its other judges
// (quiescence: no node left once the give-ups have run) let them by: when
// added, in 1 to 33 seeds over three hunts, and none in 300 seeds without
// the judge. And partition/allocating-before-timer (a member whose last
// stability timer had fired stays Acquired through Stable after the party
// changed): caught by the believers' judge of each report against the one
// before it (from Acquired to Acquired only with the same holds), in 2
// to 4 seeds over three hunts when added, none in 300 without that judge;
// the partition scenario's members drain what they give up, so there the
// change goes through Allocating anyway.
func TestCanariesBlocking(t *testing.T) {
	huntEach(t, func() sim.Scenario { _, sc := newBlockingSim(); return sc },
		"partition/leave-leaves-party-create",
		"partition/leave-leaves-failed-try",
		"partition/leave-leaves-refused-delete",
		"partition/allocating-before-timer",
	)
}

// huntEach has the scenario newSim makes catch each canary of names, in a
// subtest of its own (sim.Catch).
func huntEach(t *testing.T, newSim func() sim.Scenario, names ...canary.Name) {
	for _, name := range names {
		t.Run(string(name), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			sim.Catch(t, newSim(), string(name), canaryHunts, canaryBound)
		})
	}
}

package discovery_test

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

// The weaker variants of what discovery builds on, switched back on, are
// each caught by the discovery scenario: a cache that does not read the
// service again after a reconnect on a new session
// (cache/no-resync-after-expiry) or after a read lost with the connection
// (cache/no-rearm-after-loss), and a registration that is not made again
// on a new session (group/member-no-reregister). sim.Catch logs the seeds
// each hunt needed for the first catch.
func TestCanaries(t *testing.T) {
	for _, name := range []canary.Name{
		"cache/no-resync-after-expiry",
		"cache/no-rearm-after-loss",
		"group/member-no-reregister",
	} {
		t.Run(string(name), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			_, sc := newDiscoverySim()
			sim.Catch(t, sc, string(name), canaryHunts, canaryBound)
		})
	}
}

// A Register that does not wait for the Client's background Unregisters
// of a Static instance (discovery/register-behind-unregister) is caught
// by the blocking scenario: such an Unregister, retried after a lost
// reply, deletes the node Register has just made, and the judge finds it
// gone at its actor's next Unregister.
func TestCanaryRegisterBehindUnregister(t *testing.T) {
	const name canary.Name = "discovery/register-behind-unregister"
	restore := canary.Enable(name)
	defer restore()
	_, sc := newBlockingSim()
	sim.Catch(t, sc, string(name), canaryHunts, canaryBound)
}

// A Register of a Static instance that waits only for its own Client's
// background Unregisters (discovery/register-beside-unregister) is
// caught by the blocking scenario, whose Static actor alternates between
// two Clients of its process: an Unregister of one, going on in the
// background after its ctx ended, deletes the node a Register through
// the other has just kept, and the judge finds it gone at its actor's
// next Unregister.
func TestCanaryRegisterBesideUnregister(t *testing.T) {
	const name canary.Name = "discovery/register-beside-unregister"
	restore := canary.Enable(name)
	defer restore()
	_, sc := newBlockingSim()
	sim.Catch(t, sc, string(name), canaryHunts, canaryBound)
}

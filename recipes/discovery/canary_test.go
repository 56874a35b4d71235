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

// A persistent instance's Unregister that deletes its path at any
// version (discovery/unregister-any-incarnation) is caught by the
// blocking scenario, where two processes register and unregister one
// Static or Permanent id: the Unregister of one deletes the node the
// other made again at the path after the first's node was gone, and the
// judge of the server's journal (Scenario.OwnIncarnations) finds a
// process deleting a node it neither made nor wrote.
func TestCanaryUnregisterAnyIncarnation(t *testing.T) {
	const name canary.Name = "discovery/unregister-any-incarnation"
	restore := canary.Enable(name)
	defer restore()
	_, sc := newBlockingSim()
	sim.Catch(t, sc, string(name), canaryHunts, canaryBound)
}

// A delete at the version a read gave, sent after a cut that came
// between the read's answer and the delete, or a plain read after a
// reconnect through a member behind others' writes
// (zkops/delete-after-cut-unread), is caught by the blocking scenario:
// the Unregister of a persistent instance takes a node another process
// or the operator made at the path meanwhile, and the judge of the
// server's journal finds it (it found the bug, two processes sharing one
// Static id).
func TestCanaryDeleteAfterCutUnread(t *testing.T) {
	const name canary.Name = "zkops/delete-after-cut-unread"
	restore := canary.Enable(name)
	defer restore()
	_, sc := newBlockingSim()
	sim.Catch(t, sc, string(name), canaryHunts, canaryBound)
}

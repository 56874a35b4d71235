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
// on a new session (group/member-no-reregister); and a Join that takes
// over another session's node at its path rather than waiting it out
// (group/settle-takes-over: Curator's ServiceDiscovery deletes such a
// node), which the journal's judge (Scenario.OwnDeletes) sees here and in
// the blocking scenario. sim.Catch logs the seeds each hunt needed for
// the first catch.
func TestCanaries(t *testing.T) {
	for _, name := range []canary.Name{
		"cache/no-resync-after-expiry",
		"cache/no-rearm-after-loss",
		"group/member-no-reregister",
		"group/settle-takes-over",
	} {
		t.Run(string(name), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			_, sc := newDiscoverySim()
			sim.Catch(t, sc, string(name), canaryHunts, canaryBound)
		})
	}
}

// The canaries the blocking scenario hunts, each caught by a judge of
// its own:
//   - discovery/register-behind-unregister: a Register that does not wait
//     for the Client's background Unregisters of a Static instance; such
//     an Unregister, retried after a lost reply, deletes the node Register
//     has just made, and the judge finds it gone at its actor's next
//     Unregister;
//   - discovery/register-beside-unregister: a Register of a Static
//     instance that waits only for its own Client's background
//     Unregisters; the scenario's Static actor alternates between two
//     Clients of its process, and an Unregister of one, going on after its
//     ctx ended, deletes the node a Register through the other has just
//     kept;
//   - discovery/unregister-any-incarnation: a persistent instance's
//     Unregister that deletes its path at any version; two processes
//     register and unregister one Static or Permanent id, and the judge of
//     the server's journal (Scenario.OwnIncarnations) finds a process
//     deleting a node it neither made nor wrote;
//   - zkops/delete-after-cut-unread: a delete at the version a read gave,
//     sent after a cut that came between the read's answer and the delete,
//     or a plain read after a reconnect through a member behind others'
//     writes; the Unregister of a persistent instance takes a node another
//     process made at the path meanwhile, and the same judge finds it (it
//     found the bug).
func TestCanariesBlocking(t *testing.T) {
	for _, name := range []canary.Name{
		"discovery/register-behind-unregister",
		"discovery/register-beside-unregister",
		"discovery/unregister-any-incarnation",
		"zkops/delete-after-cut-unread",
		"group/settle-takes-over",
	} {
		t.Run(string(name), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			_, sc := newBlockingSim()
			sim.Catch(t, sc, string(name), canaryHunts, canaryBound)
		})
	}
}

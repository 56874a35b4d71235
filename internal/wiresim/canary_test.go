package wiresim_test

import (
	"testing"

	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/internal/wiresim"
)

// The judges bite through the wire: with a known bug of a recipe switched
// back on (internal/canary), the wire simulation finds a failing seed
// within a bounded number of seeds, and the failure is a safety
// violation reported by the scenario's judge. Each case names the seeds
// it took when measured; the bound leaves room for the interleavings the
// seed does not fix.
func TestCanaries(t *testing.T) {
	for _, c := range []struct {
		bug   canary.Name
		sc    func() wiresim.Scenario
		seeds int
	}{
		// Connection loss on the compare-and-set taken for "not applied":
		// the value is written again unconditionally, so an ID another
		// client drew meanwhile is handed out again. Needs a reply lost
		// after the write was applied: drop-applied, cut-after-frame, an
		// applied partition.
		{"seqid/loss-not-applied", seqidScenario, 200},
		// A waiter whose predecessor goes holds the lock without looking
		// whether it is now the lowest: two holders, whose fenced writes
		// both pass (each one's node exists) and interleave.
		{"lock/hold-when-any-predecessor-goes", lockScenario, 200},
		// An ack that deletes the in-flight copy without checking that
		// the consumer still owns it: an item given back after its
		// consumer's session ended is acknowledged twice.
		{"queue/ack-unchecked", queueScenario, 200},
	} {
		t.Run(string(c.bug), func(t *testing.T) {
			restore := canary.Enable(c.bug)
			defer restore()
			seeds := make([]uint64, c.seeds)
			for i := range seeds {
				seeds[i] = uint64(i + 1)
			}
			st, bad := wiresim.Seeds(c.sc(), seeds)
			if bad == nil {
				t.Fatalf("%s: no seed of %d failed with the bug on: %s", c.bug, c.seeds, st)
			}
			if bad.Kind != wiresim.Safety {
				t.Fatalf("%s: seed %d failed, but not on safety:\n%s", c.bug, bad.Seed, wiresim.Report(*bad, t.Name(), 40))
			}
			t.Logf("%s caught by seed %d (%d seeds run): %v", c.bug, bad.Seed, st.Seeds, bad.Err)
		})
	}
}

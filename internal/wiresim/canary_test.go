package wiresim_test

import (
	"testing"
	"time"

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
	} {
		t.Run(string(c.bug), func(t *testing.T) {
			restore := canary.Enable(c.bug)
			defer restore()
			// Until a seed fails on safety: with the bug on, a seed may
			// also fail on liveness (a recipe that misbehaves can stall
			// too), which is passed over; a short Recovery keeps those
			// cheap.
			sc := c.sc()
			sc.Recovery = 5 * time.Second
			seeds := make([]uint64, c.seeds)
			for i := range seeds {
				seeds[i] = uint64(i + 1)
			}
			st, bad, others := wiresim.Hunt(sc, seeds, wiresim.Safety)
			for _, o := range others {
				t.Logf("seed %d failed on %s with the bug on (passed over): %v", o.Seed, o.Kind, o.Err)
			}
			if bad == nil {
				t.Fatalf("%s: no seed of %d failed on safety with the bug on", c.bug, c.seeds)
			}
			t.Logf("%s caught by seed %d (%d seeds run): %v", c.bug, bad.Seed, st.Seeds, bad.Err)
		})
	}
}

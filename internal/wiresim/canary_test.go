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
	} {
		t.Run(string(c.bug), func(t *testing.T) {
			restore := canary.Enable(c.bug)
			defer restore()
			// Seeds in batches until one fails on safety: with the bug on,
			// a seed may also fail on liveness first (a recipe that
			// misbehaves can stall too), which is logged and passed over.
			var st wiresim.Stats
			var bad *wiresim.Result
			for next := 1; next <= c.seeds; {
				batch := make([]uint64, 0, wiresim.Parallel())
				for ; len(batch) < cap(batch) && next <= c.seeds; next++ {
					batch = append(batch, uint64(next))
				}
				s, b := wiresim.Seeds(c.sc(), batch)
				st.Seeds += s.Seeds
				if b != nil && b.Kind == wiresim.Safety {
					bad = b
					break
				}
				if b != nil {
					t.Logf("seed %d failed on %s with the bug on (passed over): %v", b.Seed, b.Kind, b.Err)
					next = int(b.Seed) + 1
				}
			}
			if bad == nil {
				t.Fatalf("%s: no seed of %d failed on safety with the bug on", c.bug, c.seeds)
			}
			t.Logf("%s caught by seed %d (%d seeds run): %v", c.bug, bad.Seed, st.Seeds, bad.Err)
		})
	}
}

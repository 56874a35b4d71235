package lock_test

import (
	"math"
	"slices"
	"testing"

	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/lock"
)

// Each known bug, switched back on, is caught by the simulation (the
// wrap-around one by the simulation with the counter started near its
// end, as TestSeededFaultsAcrossSequenceWrap runs it): five
// hunts, starting from seeds 1, 1001, ..., 4001, each run seeds until the
// first violation and must find one within maxSeeds. The seeds each hunt
// needed are logged, with their median and worst. Not parallel: canaries
// are process-wide.
func TestCanariesCaught(t *testing.T) {
	const hunts, maxSeeds = 5, 500
	for _, name := range lock.Canaries {
		t.Run(string(name), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			var o simOpts
			if name == lock.WrapCanary {
				o.cversion = math.MaxInt32 - 3
			}
			if slices.Contains(lock.TryCanaries, name) {
				o.try = true
			}
			var needed []int
			for h := range hunts {
				from := uint64(1 + 1000*h)
				n := 0
				for seed := from; seed < from+maxSeeds; seed++ {
					if _, err := simulate(seed, o); err != nil {
						n = int(seed-from) + 1
						if h == 0 {
							t.Logf("first catch, seed %d: %v", seed, err)
						}
						break
					}
				}
				if n == 0 {
					t.Fatalf("canary %s not caught in %d seeds from seed %d", name, maxSeeds, from)
				}
				needed = append(needed, n)
			}
			sorted := slices.Sorted(slices.Values(needed))
			t.Logf("canary %s: seeds to catch per hunt %v, median %d, worst %d", name, needed, sorted[len(sorted)/2], sorted[len(sorted)-1])
		})
	}
}

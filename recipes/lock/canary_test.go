package lock_test

import (
	"testing"

	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/lock"
)

// Each known bug, switched back on, is caught by the simulation within
// maxSeeds seeds; the number of seeds the first catch needed is logged.
// Not parallel: canaries are process-wide.
func TestCanariesCaught(t *testing.T) {
	const maxSeeds = 500
	for _, name := range lock.Canaries {
		t.Run(string(name), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			for seed := uint64(1); seed <= maxSeeds; seed++ {
				if _, err := simulate(seed, simOpts{}); err != nil {
					t.Logf("canary %s caught after %d seeds (seed %d): %v", name, seed, seed, err)
					return
				}
			}
			t.Fatalf("canary %s not caught in %d seeds", name, maxSeeds)
		})
	}
}

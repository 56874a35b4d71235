package barrier_test

import (
	"testing"

	"github.com/zkflow/zkflow/internal/canary"
)

// canaryBound is the most seeds a canary may survive: each known bug must
// be caught by the simulation within this many seeds.
const canaryBound = 500

// Each known bug, switched back on, is caught by the simulation. The
// canary names are the package's own (barrier.go, double.go); the number
// of seeds to the first catch is logged.
func TestCanaries(t *testing.T) {
	cases := []struct {
		name canary.Name
		sim  func(seed uint64) error
	}{
		{"barrier/trust-event", func(s uint64) error { _, err := simBarrier(s); return err }},
		{"barrier/loss-as-gone", func(s uint64) error { _, err := simBarrier(s); return err }},
		{"barrier/double-blind-create", func(s uint64) error { _, err := simDouble(s); return err }},
		{"barrier/double-leave-trusts-event", func(s uint64) error { _, err := simDouble(s); return err }},
	}
	for _, tc := range cases {
		t.Run(string(tc.name), func(t *testing.T) {
			restore := canary.Enable(tc.name)
			defer restore()
			for seed := uint64(1); seed <= canaryBound; seed++ {
				if err := tc.sim(seed); err != nil {
					t.Logf("caught after %d seeds: %v", seed, err)
					return
				}
			}
			t.Fatalf("canary %s not caught in %d seeds", tc.name, canaryBound)
		})
	}
}

package rwlock_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/rwlock"
)

// Each known bug, switched back on, is caught: sim.Catch hunts three
// times over disjoint seed ranges and logs the seeds each hunt needed.
// Not parallel: canaries are process-wide.
func TestCanariesCaught(t *testing.T) {
	for _, name := range rwlock.Canaries {
		t.Run(string(name), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			_, sc := newRWSim()
			sim.Catch(t, sc, string(name), 3, 300)
		})
	}
}

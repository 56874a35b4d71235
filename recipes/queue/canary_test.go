package queue_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/queue"
)

// Each known bug of a mode (queue.go), switched back on, is caught by that
// mode's simulation: five hunts over disjoint seed ranges, each within 300
// seeds (sim.Catch logs the seeds each needed). Not parallel: canaries
// are process-wide.
func TestCanariesCaught(t *testing.T) {
	for _, tc := range []struct {
		mode  queue.Mode
		names []canary.Name
	}{
		{queue.AtMostOnce, queue.AtMostOnceCanaries},
		{queue.AtLeastOnce, queue.AtLeastOnceCanaries},
	} {
		for _, name := range tc.names {
			t.Run(string(name), func(t *testing.T) {
				restore := canary.Enable(name)
				defer restore()
				_, sc := newQueueSim(tc.mode)
				sim.Catch(t, sc, string(name), 5, 300)
			})
		}
	}
}

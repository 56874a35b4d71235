package barrier_test

import (
	"math/rand/v2"
	"strings"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
)

// draw is a random duration below max, from the seed's randomness.

func draw(rng *rand.Rand, max time.Duration) time.Duration {
	return time.Duration(rng.Int64N(int64(max)))
}

// participantNodes lists the participant nodes under dir on the server.
func participantNodes(w *sim.World, dir string) []string {
	var out []string
	for _, n := range w.Children(dir) {
		if strings.HasPrefix(n, "_p_") {
			out = append(out, n)
		}
	}
	return out
}

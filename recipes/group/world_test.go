package group_test

import (
	"math/rand/v2"
	"time"
)

// draw is a random duration below max, from the seed's randomness.

func draw(rng *rand.Rand, max time.Duration) time.Duration {
	return time.Duration(rng.Int64N(int64(max)))
}

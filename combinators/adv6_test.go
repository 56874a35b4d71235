package combinators_test

import (
	"math"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
)

// Policy.Validate's doc: "Validate reports a policy that cannot work", and
// Backoff's: "the wait before retry n (n = 1, 2, ...) is min(Max, Initial *
// Multiplier^(n-1)), scaled by a factor drawn uniformly from [1-Jitter,
// 1+Jitter]"; "Multiplier < 1 is taken as 1 (constant backoff)".
//
// A NaN Multiplier (a ratio computed from a zero over a zero) passes
// Validate (which rejects a NaN Jitter), and Delay then returns the
// conversion of NaN to a Duration: not within [0, Max(1+Jitter)], on amd64
// a negative wait, so Retry retries at once with no backoff at all.
func TestAdv6BackoffNaNMultiplier(t *testing.T) {
	b := c.Backoff{Initial: time.Second, Max: 10 * time.Second, Multiplier: math.NaN()}
	p := c.Policy{Attempts: 5, Backoff: b}
	if err := p.Validate(); err != nil {
		return // refused: the promise holds
	}
	for n := 1; n <= 4; n++ {
		d := b.Delay(n, 0.5)
		if d < time.Second || d > 10*time.Second {
			t.Fatalf("Delay(%d) = %v with a NaN Multiplier that Validate accepted, want within [Initial, Max] = [1s, 10s]", n, d)
		}
	}
}

package combinators_test

import (
	"math"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
)

// Backoff's doc: the wait before retry n "is min(Max, Initial *
// Multiplier^(n-1)), scaled by a factor drawn uniformly from [1-Jitter,
// 1+Jitter]", and Delay takes u "in [0, 1)". With Jitter 1 and u 0 the
// factor is 0: no wait, as Delay(100, 0) of this backoff gives. But past
// float64's range (Initial * 2^(n-1) is +Inf from n = 1,005 here, at once
// with an infinite Multiplier, which Validate accepts) the product of
// +Inf and 0 is NaN, and Delay returned its conversion: on amd64
// math.MinInt64, a negative wait (reported so to an Observer's OnRetry).
// (This test failed on the code before the fix.)
func TestBackoffFullJitterOfAnOverflowedWaitIsNotNegative(t *testing.T) {
	for _, b := range []c.Backoff{
		{Initial: time.Millisecond, Multiplier: 2, Jitter: 1},
		{Initial: time.Millisecond, Multiplier: math.Inf(1), Jitter: 1},
	} {
		if err := (c.Policy{Backoff: b}).Validate(); err != nil {
			t.Fatalf("Validate(%+v): %v", b, err)
		}
		for _, n := range []int{2, 100, 1100, math.MaxInt} {
			if d := b.Delay(n, 0); d != 0 {
				t.Errorf("%+v: Delay(%d, 0) = %v, want 0 (a factor of 0)", b, n, d)
			}
			if d := b.Delay(n, 0.999); d < 0 {
				t.Errorf("%+v: Delay(%d, 0.999) = %v < 0", b, n, d)
			}
		}
	}
}

package queue

import (
	"fmt"
	"math"
	"testing"
)

// flight names a copy as fmt's "%s/%s-%016x-%s" does.
func TestFlightName(t *testing.T) {
	q := &Queue{inflight: "/q.inflight"}
	for _, z := range []int64{0, 1, 0xabc, math.MaxInt32, math.MaxInt64, -1, math.MinInt64} {
		want := fmt.Sprintf("%s/%s-%016x-%s", q.inflight, "0123abcd", uint64(z), "qn-0000000007")
		if got := q.flight("0123abcd", z, "qn-0000000007"); got != want {
			t.Errorf("flight(%d) = %q, want %q", z, got, want)
		}
	}
}

package seqid_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/zkflow/zkflow/recipes/seqid"
)

// The wait after the n-th BadVersion in a row is drawn from [0, bound),
// the bound the lost write's latency doubled n-1 times, at most 32 times
// it and at most 50 ms; nothing is waited without a measured latency or
// before a conflict.
func TestBackoffBounds(t *testing.T) {
	const rtt = 3 * time.Millisecond
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		conflicts int
		bound     time.Duration
	}{{1, rtt}, {2, 2 * rtt}, {3, 4 * rtt}, {5, 16 * rtt}, {6, 50 * time.Millisecond}, {100, 50 * time.Millisecond}} {
		var longest time.Duration
		for range 2000 {
			d := seqid.Backoff(rtt, tc.conflicts, rng.Uint64())
			if d < 0 || d >= tc.bound {
				t.Fatalf("conflicts %d: wait %s outside [0, %s)", tc.conflicts, d, tc.bound)
			}
			longest = max(longest, d)
		}
		if longest < tc.bound*9/10 {
			t.Errorf("conflicts %d: longest of 2000 waits %s, want close to %s (uniform draws)", tc.conflicts, longest, tc.bound)
		}
	}
	for range 2000 {
		if d := seqid.Backoff(time.Second, 1, rng.Uint64()); d >= 50*time.Millisecond {
			t.Fatalf("a write of 1s lost: wait %s, want under 50ms", d)
		}
	}
	if d := seqid.Backoff(0, 3, 12345); d != 0 {
		t.Errorf("no measured round: wait %s, want 0", d)
	}
	if d := seqid.Backoff(rtt, 0, 12345); d != 0 {
		t.Errorf("no conflict: wait %s, want 0", d)
	}
}

package sim

import (
	"math/rand/v2"
	"testing"
)

// TestRestartLagCountedOnceStarted: a restart's lag counts as fired once
// the new process's session has started on the lagging member, and not
// when that process crashed again (or the run ended) before its first
// session, which then never lagged.
func TestRestartLagCountedOnceStarted(t *testing.T) {
	w, err := New(Config{Clients: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Drive()
	in := &injector{w: w, rlrng: alwaysLag(t)}
	restart := func() {
		t.Helper()
		if err := w.Crash(0, true); err != nil {
			t.Fatal(err)
		}
		in.restartLag(0)
	}
	restart()
	if got := in.firedCounts()[Lag]; got != 0 {
		t.Fatalf("a restart lag whose session has not started: %d fired, want 0", got)
	}
	restart() // the process dies again before its first session
	w.Drive()
	if lagging, _ := w.Conns[0].Lagging(); !lagging {
		t.Fatal("the second restart's session does not lag")
	}
	if got := in.firedCounts()[Lag]; got != 1 {
		t.Fatalf("two restart lags, one session started: %d fired, want 1", got)
	}
}

// alwaysLag is a stream whose every restartLag draw lags (IntN(2) == 0,
// twice in a row).
func alwaysLag(t *testing.T) *rand.Rand {
	for seed := uint64(0); seed < 1000; seed++ {
		r := rand.New(rand.NewPCG(seed, 0))
		a := r.IntN(2)
		r.Int64N(1 << 30)
		if b := r.IntN(2); a == 0 && b == 0 {
			return rand.New(rand.NewPCG(seed, 0))
		}
	}
	t.Fatal("no seed draws two lags")
	return nil
}

package sim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
)

func TestLockIDScenario(t *testing.T) {
	n := 30
	if testing.Short() {
		n = 5
	}
	sc, s := newLockID(4, 10*time.Second)
	st := sim.Check(t, sc, n)
	if st.Failures() > 0 {
		return
	}
	t.Logf("%d critical sections, %d ids, %d sections cut short by a fault, %d late writes refused",
		s.sections, s.idsDrawn, s.lostTotal, s.lateRefused)
	if s.sections == 0 || s.lostTotal == 0 || s.lateRefused == 0 {
		t.Fatal("the faults never bit a holder: the scenario checks nothing")
	}
	total := 0
	for _, f := range st.Fired {
		total += f
	}
	if total == 0 {
		t.Fatal("no fault fired: the scenario checks nothing")
	}
}

func BenchmarkLockID10(b *testing.B) {
	sc := lockIDScenario(10, 10*time.Second)
	seed := uint64(0)
	for b.Loop() {
		seed++
		if res := sim.RunSeed(sc, seed, false); res.Err != nil {
			b.Fatal(sim.Report(b, sc, res))
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "seeds/s")
}

// The large run of make sim: SIM_SEEDS seeds of each scenario here
// (skipped when unset).
func TestSimExplore(t *testing.T) {
	claim, _ := newClaimScenario(3, 0.1)
	sim.Explore(t, lockIDScenario(5, 10*time.Second), counterScenario(), busyScenario(), claim)
}

// Two runs of the same seed have the same history, byte for byte.
func TestSimDeterminism(t *testing.T) {
	sim.Determinism(t, lockIDScenario(5, 10*time.Second), sim.Sample(10, 1000))
	sim.Determinism(t, counterScenario(), sim.Sample(10, 1000))
	sim.Determinism(t, busyScenario(), sim.Sample(10, 1000))
	claim, _ := newClaimScenario(3, 0.1)
	sim.Determinism(t, claim, sim.Sample(10, 1000))
	rooted := lockIDScenario(5, 10*time.Second)
	rooted.Root = sim.ExploreRoot
	sim.Determinism(t, rooted, sim.Sample(4, 1000))
}

// The drawn range of Explore: from SIM_FROM, else from the commit, else
// the fixed offset (outside a git checkout), saying which.
func TestDrawnFrom(t *testing.T) {
	t.Setenv("SIM_FROM", "")
	t.Setenv("SIM_COMMIT", "")
	if from, src := sim.DrawnFrom(); from != sim.FixedFrom || !strings.Contains(src, "fixed offset") {
		t.Errorf("no commit: %d (%s), want the fixed offset %d", from, src, sim.FixedFrom)
	}
	t.Setenv("SIM_COMMIT", "00000000000a5e7b0c8f")
	if from, src := sim.DrawnFrom(); from != sim.FixedFrom+10 || src != "commit 00000000000a" {
		t.Errorf("commit: %d (%s)", from, src)
	}
	t.Setenv("SIM_COMMIT", "2e8338c1d5e0f4aa")
	a, _ := sim.DrawnFrom()
	t.Setenv("SIM_COMMIT", "a83f2e2b77c01d93")
	if b, _ := sim.DrawnFrom(); a == b {
		t.Errorf("two commits draw the same range from %d", a)
	}
	t.Setenv("SIM_FROM", "77")
	if from, src := sim.DrawnFrom(); from != 77 || src != "SIM_FROM" {
		t.Errorf("SIM_FROM: %d (%s)", from, src)
	}
}

// A workload that reports no progress (the README's skeleton, copied as
// it is) fails on liveness with a message that says what happened: the
// world went idle, and how a workload reports progress; not "no progress
// within" a recovery time that never passed.
func TestIdleWorkloadSaysHowToReportProgress(t *testing.T) {
	res := sim.RunSeed(sim.Scenario{Name: "idle", Clients: 2, Workload: func(r *sim.Trial) {}}, 1, false)
	if res.Kind != sim.Liveness || res.Err == nil {
		t.Fatalf("an idle workload: %v (%v), want a liveness failure", res.Err, res.Kind)
	}
	if msg := res.Err.Error(); !strings.Contains(msg, "went idle") || !strings.Contains(msg, "Trial.Progress") {
		t.Fatalf("message %q: want it to say the world went idle and name Trial.Progress", msg)
	}
}

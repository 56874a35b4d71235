package sim_test

import (
	"os"
	"strconv"
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
	n, _ := strconv.Atoi(os.Getenv("SIM_SEEDS"))
	if n <= 0 {
		t.Skip("SIM_SEEDS not set")
	}
	t.Log(sim.Check(t, lockIDScenario(5, 10*time.Second), n).Line())
	t.Log(sim.Check(t, counterScenario(), n).Line())
}

// Two runs of the same seed have the same history, byte for byte.
func TestSimDeterminism(t *testing.T) {
	sim.Determinism(t, lockIDScenario(5, 10*time.Second), sim.Sample(10, 1000))
	sim.Determinism(t, counterScenario(), sim.Sample(10, 1000))
}

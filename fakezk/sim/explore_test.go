package sim_test

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
)

// gcPercent reads the garbage collector's target.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// Explore runs its seeds at ExploreGCPercent unless GOGC says otherwise,
// and gives the previous target back.
func TestExploreGCPercent(t *testing.T) {
	t.Setenv("SIM_SEEDS", "1")
	t.Setenv("SIM_FROM", "77")
	before := gcPercent()
	for _, env := range []string{"", "100"} {
		t.Setenv("GOGC", env)
		var during []int
		sc := sim.Scenario{
			Name: "gc", Clients: 1, Duration: time.Second,
			Faults: sim.Faults{Allow: sim.Of(sim.Delay)},
			Live:   func(*sim.Trial) bool { return true },
			Setup:  func(*sim.Trial) error { during = append(during, gcPercent()); return nil },
		}
		sim.Explore(t, sc)
		want := sim.ExploreGCPercent
		if env != "" {
			want = before
		}
		if len(during) != 2 || during[0] != want || during[1] != want {
			t.Errorf("GOGC=%q: target during the seeds %v, want %d", env, during, want)
		}
		if got := gcPercent(); got != before {
			t.Errorf("GOGC=%q: target after Explore %d, was %d before", env, got, before)
		}
	}
}

// Explore runs its seeds on ExploreProcs threads unless GOMAXPROCS says
// otherwise, and gives the previous number back.
func TestExploreProcs(t *testing.T) {
	t.Setenv("SIM_SEEDS", "1")
	t.Setenv("SIM_FROM", "77")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(sim.ExploreProcs + 1)) // not ExploreProcs already, on any machine
	before := runtime.GOMAXPROCS(0)
	for _, env := range []string{"", "3"} {
		t.Setenv("GOMAXPROCS", env)
		var during []int
		sc := sim.Scenario{
			Name: "procs", Clients: 1, Duration: time.Second,
			Faults: sim.Faults{Allow: sim.Of(sim.Delay)},
			Live:   func(*sim.Trial) bool { return true },
			Setup:  func(*sim.Trial) error { during = append(during, runtime.GOMAXPROCS(0)); return nil },
		}
		sim.Explore(t, sc)
		want := sim.ExploreProcs
		if env != "" {
			want = before
		}
		if len(during) != 2 || during[0] != want || during[1] != want {
			t.Errorf("GOMAXPROCS=%q: threads during the seeds %v, want %d", env, during, want)
		}
		if got := runtime.GOMAXPROCS(0); got != before {
			t.Errorf("GOMAXPROCS=%q: threads after Explore %d, were %d before", env, got, before)
		}
	}
}

package sim_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
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

// With SIM_HASHES set, Explore writes one line per seed of both ranges
// (scenario, seed, trace hash): the same on a second run, different for
// a workload that sends other requests. Its Stats count the heap objects
// the seeds allocated.
func TestExploreHashes(t *testing.T) {
	t.Setenv("SIM_SEEDS", "2")
	t.Setenv("SIM_FROM", "77")
	scenario := func(nodes int) sim.Scenario {
		return sim.Scenario{
			Name: "hashes", Clients: 1, Duration: time.Second,
			Faults: sim.Faults{Allow: sim.Of(sim.Delay)},
			Live:   func(*sim.Trial) bool { return true },
			Workload: func(r *sim.Trial) {
				for i := range nodes {
					sim.Submit(r.World, 0, task.Create(fmt.Sprintf("/n%d", i), nil, task.Persistent))
				}
			},
		}
	}
	run := func(nodes int) (string, sim.Stats) {
		name := filepath.Join(t.TempDir(), "hashes")
		t.Setenv("SIM_HASHES", name)
		st := sim.Explore(t, scenario(nodes))
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b), st[0]
	}
	a, st := run(2)
	b, _ := run(2)
	c, _ := run(3)
	lines := strings.Split(strings.TrimSpace(a), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "hashes 1 ") || !strings.HasPrefix(lines[2], "hashes 77 ") || len(strings.Fields(lines[0])[2]) != 64 {
		t.Fatalf("SIM_HASHES file:\n%s\nwant 4 lines, of seeds 1, 2, 77, 78, each with a hash", a)
	}
	if a != b {
		t.Errorf("two runs of the same seeds wrote different hashes:\n%s\n%s", a, b)
	}
	for i, l := range strings.Split(strings.TrimSpace(c), "\n") {
		if l == lines[i] {
			t.Errorf("a workload with one more create wrote the same line %q", l)
		}
	}
	if st.Allocs == 0 {
		t.Errorf("Stats.Allocs is 0")
	}
}

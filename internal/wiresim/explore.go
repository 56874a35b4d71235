package wiresim

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
)

var (
	seedFlag = flag.Uint64("wiresim.seed", 0, "run only this seed of every wire scenario, with the server's trace")
	tailFlag = flag.Int("wiresim.tail", 80, "trace lines printed for a failed seed (0: all)")
	parFlag  = flag.Int("wiresim.par", 0, "seeds run at once (0: SIM_WIRE_PAR, else 24 per CPU, 4 under the race detector)")
)

// Parallel is the number of seeds Seeds runs at once: -wiresim.par, else
// SIM_WIRE_PAR, else 24 per CPU (4 under the race detector). A seed spends
// most of its time waiting on the real clock (the faults' time,
// go-zookeeper's timers), so several run on each core.
func Parallel() int {
	if *parFlag > 0 {
		return *parFlag
	}
	if n, err := strconv.Atoi(os.Getenv("SIM_WIRE_PAR")); err == nil && n > 0 {
		return n
	}
	return perCPU * runtime.GOMAXPROCS(0)
}

// Stats sums the seeds of a scenario.
type Stats struct {
	Scenario string
	Seeds    int
	// Rooted counts the seeds whose clients ran under a root.
	Rooted                  int
	Safety, Liveness, Setup int
	Fired                   [numClasses]int
	Wall, CPU               time.Duration
	Ranges                  []string
	// Counts sums the seeds' Result.Counts.
	Counts  map[string]int
	allowed Classes
}

func (s *Stats) add(res Result) {
	s.Seeds++
	if res.Root != "" {
		s.Rooted++
	}
	switch res.Kind {
	case Safety:
		s.Safety++
	case Liveness:
		s.Liveness++
	case SetupFailed:
		s.Setup++
	}
	for c := range s.Fired {
		s.Fired[c] += res.Fired[c]
	}
	for k, v := range res.Counts {
		if s.Counts == nil {
			s.Counts = map[string]int{}
		}
		s.Counts[k] += v
	}
}

// Line is s in the form internal/simsum sums ("SIM scenario=... "), with
// the fault classes the scenario allows, so that make sim's summary
// counts the wire seeds beside the in-memory ones and fails if one of
// these classes never fired.
func (s Stats) Line() string {
	var fired []string
	for _, c := range s.allowed.list() {
		fired = append(fired, fmt.Sprintf("wire-%s:%d", c, s.Fired[c]))
	}
	ranges := strings.Join(s.Ranges, ",")
	if ranges == "" {
		ranges = "-"
	}
	return fmt.Sprintf("SIM scenario=%s seeds=%d wall_ms=%d safety=%d liveness=%d setup=%d fired=%s regressions=- ranges=%s rooted=%d cpu_ms=%d",
		s.Scenario, s.Seeds, s.Wall.Milliseconds(), s.Safety, s.Liveness, s.Setup, strings.Join(fired, ","), ranges, s.Rooted, s.CPU.Milliseconds())
}

func (s Stats) String() string {
	var fired []string
	for _, c := range s.allowed.list() {
		fired = append(fired, fmt.Sprintf("%s=%d", c, s.Fired[c]))
	}
	var counts []string
	for _, k := range slices.Sorted(maps.Keys(s.Counts)) {
		counts = append(counts, fmt.Sprintf("%s=%d", k, s.Counts[k]))
	}
	return fmt.Sprintf("%s: %d seeds (%d under a root) in %s (%.1f seeds/s, %.1f per CPU second), %d safety, %d liveness, %d setup failures; faults fired: %s; counted: %s",
		s.Scenario, s.Seeds, s.Rooted, s.Wall.Round(time.Millisecond), float64(s.Seeds)/s.Wall.Seconds(), float64(s.Seeds)/max(s.CPU.Seconds(), 1e-3),
		s.Safety, s.Liveness, s.Setup, strings.Join(fired, " "), strings.Join(counts, " "))
}

// Seeds runs the given seeds of sc, Parallel() at a time, and returns
// their stats and the failed seed with the lowest number among those run
// (nil if none failed). After a failure no new seed starts.
func Seeds(sc Scenario, seeds []uint64) (Stats, *Result) {
	return seedsUntil(sc, seeds, func(res Result) bool { return res.Err != nil })
}

// Hunt runs the given seeds of sc, Parallel() at a time, until one fails
// with kind (a canary's search: with a bug switched on, seeds may fail in
// other ways first, which Hunt passes over and returns in others). It
// returns the stats, the failed seed of that kind with the lowest number
// among those run (nil if none), and the other failures.
func Hunt(sc Scenario, seeds []uint64, kind Kind) (st Stats, found *Result, others []Result) {
	var mu sync.Mutex
	st, found = seedsUntil(sc, seeds, func(res Result) bool {
		if res.Err != nil && res.Kind != kind {
			mu.Lock()
			others = append(others, res)
			mu.Unlock()
		}
		return res.Kind == kind
	})
	return st, found, others
}

// seedsUntil runs seeds until stop holds for a result; it returns the
// stats and the result stop held for with the lowest seed.
func seedsUntil(sc Scenario, seeds []uint64, stop func(Result) bool) (Stats, *Result) {
	sc.defaults()
	st := Stats{Scenario: sc.Name, allowed: sc.Faults}
	start, cpu := time.Now(), processCPU()
	var (
		mu     sync.Mutex
		first  *Result
		next   int
		wg     sync.WaitGroup
		failed bool
	)
	for range min(Parallel(), len(seeds)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if failed || next == len(seeds) {
					mu.Unlock()
					return
				}
				seed := seeds[next]
				next++
				mu.Unlock()
				res := RunSeed(sc, seed, false)
				mu.Lock()
				st.add(res)
				if stop(res) {
					failed = true
					if first == nil || res.Seed < first.Seed {
						first = &res
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	st.Wall, st.CPU = time.Since(start), processCPU()-cpu
	return st, first
}

// Check runs seeds 1..n of sc (only -wiresim.seed, traced, when set) and
// fails t with the report of a failed seed. It logs and returns the
// stats.
func Check(t testing.TB, sc Scenario, n int) Stats {
	t.Helper()
	if *seedFlag != 0 {
		sc.defaults()
		res := RunSeed(sc, *seedFlag, true)
		st := Stats{Scenario: sc.Name, allowed: sc.Faults}
		st.add(res)
		if res.Err != nil {
			t.Fatal(Report(res, t.Name(), *tailFlag))
		}
		t.Logf("seed %d passed; plan: %v", res.Seed, res.Plan)
		return st
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	st, bad := Seeds(sc, seeds)
	st.Ranges = []string{fmt.Sprintf("1-%d", n)}
	t.Log(st.String())
	if bad != nil {
		t.Fatal(Report(*bad, t.Name(), *tailFlag) + saveReport(*bad, t.Name()))
	}
	return st
}

// Explore is the large run of make sim: SIM_WIRE_SEEDS seeds of each
// scenario from the fixed range 1..n and as many from the range drawn
// from the commit (sim.DrawnFrom), each failure reported, and a
// machine-readable line per scenario for internal/simsum. It skips t when
// SIM_WIRE_SEEDS is unset, and runs only the seed of -wiresim.seed, traced,
// of every scenario when that is set.
func Explore(t *testing.T, scs ...Scenario) {
	t.Helper()
	n, _ := strconv.Atoi(os.Getenv("SIM_WIRE_SEEDS"))
	if n <= 0 && *seedFlag == 0 {
		t.Skip("SIM_WIRE_SEEDS not set")
	}
	if *seedFlag != 0 { // the command a failed seed's report names
		for _, sc := range scs {
			t.Run(sc.Name, func(t *testing.T) { Check(t, sc, 1) })
		}
		return
	}
	from, source := sim.DrawnFrom()
	t.Logf("SIMRANGE fixed=1-%d drawn=%d-%d source=%q", n, from, from+uint64(n)-1, source)
	for _, sc := range scs {
		var seeds []uint64
		for i := range uint64(n) {
			seeds = append(seeds, 1+i, from+i)
		}
		st, bad := Seeds(sc, seeds)
		st.Ranges = []string{fmt.Sprintf("1-%d", n), fmt.Sprintf("%d-%d", from, from+uint64(n)-1)}
		if bad != nil {
			// The failure again last: a CI log's excerpt shows the end.
			t.Error(Report(*bad, t.Name(), *tailFlag) + saveReport(*bad, t.Name()) +
				fmt.Sprintf("%s seed %d failed (%s): %v", bad.Scenario, bad.Seed, bad.Kind, bad.Err))
		}
		t.Log(st.String())
		t.Log(st.Line())
	}
}

// saveReport writes the whole report of a failed seed (every trace line)
// to a file in the temporary directory, since the seed cannot be replayed
// to see it again, and says where.
func saveReport(res Result, test string) string {
	f, err := os.CreateTemp("", fmt.Sprintf("wiresim-%s-%d-*.txt", res.Scenario, res.Seed))
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.WriteString(Report(res, test, 0)); err != nil {
		return ""
	}
	return "the whole trace: " + f.Name() + "\n"
}

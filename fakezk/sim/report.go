package sim

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The flags every test binary that imports sim has.
var (
	seedFlag  = flag.Uint64("sim.seed", 0, "run only this seed in every sim.Check, traced, and print its history (replay)")
	seedsFlag = flag.Int("sim.seeds", 0, "run this many seeds in every sim.Check (0: as many as the test asks)")
	tailFlag  = flag.Int("sim.tail", 40, "trace lines printed for a failing or replayed seed (0: all)")
	svgFlag   = flag.String("sim.svg", "", "with -sim.seed: draw the seed's timeline as an SVG picture in this file (a relative path is in the package's directory; a second scenario's picture gets its name added)")
)

// Stats sums the results of many seeds.
type Stats struct {
	Scenario string
	Seeds    int
	// Rooted counts the seeds whose clients ran under a root, Synced
	// those whose executors sent their sync after a reconnect
	// (Plan.SyncAfterReconnect).
	Rooted, Synced int
	// Safety, Liveness and Setup count the seeds that failed, by kind.
	Safety, Liveness, Setup int
	// Fired counts the faults injected per class; PlansWith the seeds
	// whose plan had the class on.
	Fired     [numClasses]int
	PlansWith [numClasses]int
	SimTime   time.Duration
	// Wall is the real time the seeds took (for the report only: nothing
	// in a run reads the wall clock).
	Wall time.Duration
	// CPU is the CPU time the process used meanwhile, garbage collection
	// included (for the report: on a shared machine it measures the
	// scenario's own cost better than Wall; 0 where not measured).
	CPU time.Duration
	// Allocs is the number of heap objects the process allocated
	// meanwhile (runtime.MemStats.Mallocs; 0 where not measured): unlike
	// Wall and CPU the same on every run of the same seeds, so a change's
	// effect on it is measured exactly.
	Allocs uint64
	// Regressions lists the regression seeds replayed and Ranges the seed
	// ranges run ("first-last"), by Explore.
	Regressions []uint64
	Ranges      []string
}

// Add counts one result.
func (s *Stats) Add(res Result) {
	s.Seeds++
	if res.Root != "" {
		s.Rooted++
	}
	if res.Plan.SyncAfterReconnect {
		s.Synced++
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
		if res.Plan.On.Has(FaultClass(c)) {
			s.PlansWith[c]++
		}
	}
	s.SimTime += res.SimTime
}

// Failures is the number of seeds that failed.
func (s Stats) Failures() int { return s.Safety + s.Liveness + s.Setup }

// seedsPerSecond is Seeds over Wall.
func (s Stats) seedsPerSecond() float64 {
	if s.Wall <= 0 {
		return 0
	}
	return float64(s.Seeds) / s.Wall.Seconds()
}

// firedString lists the faults fired per class, "class=n" separated by
// spaces, every class included.
func (s Stats) firedString() string {
	parts := make([]string, 0, numClasses)
	for _, c := range Classes() {
		parts = append(parts, fmt.Sprintf("%s=%d", c, s.Fired[c]))
	}
	return strings.Join(parts, " ")
}

func (s Stats) String() string {
	allocs := ""
	if s.Allocs > 0 && s.Seeds > 0 {
		allocs = fmt.Sprintf(", %d heap objects allocated per seed", s.Allocs/uint64(s.Seeds))
	}
	return fmt.Sprintf("%s: %d seeds (%d under a root, %d with the executors' sync after a reconnect) in %s (%.1f seeds/s%s), %d safety violations, %d liveness failures, %d setup failures, %s simulated; faults fired: %s",
		s.Scenario, s.Seeds, s.Rooted, s.Synced, s.Wall.Round(time.Millisecond), s.seedsPerSecond(), allocs, s.Safety, s.Liveness, s.Setup,
		s.SimTime.Round(time.Second), s.firedString())
}

// line is s in one machine-readable line ("SIM key=value ..."), which
// the Makefile's sim target sums across packages (internal/simsum); the
// regression seeds replayed and the ranges run ("-" for none), then the
// seeds run under a root, the CPU time used and the seeds run with the
// executors' sync after a reconnect, close it.
func (s Stats) line() string {
	fired := make([]string, 0, numClasses)
	for _, c := range Classes() {
		fired = append(fired, fmt.Sprintf("%s:%d", c, s.Fired[c]))
	}
	ranges := strings.Join(s.Ranges, ",")
	if ranges == "" {
		ranges = "-"
	}
	return fmt.Sprintf("SIM scenario=%s seeds=%d wall_ms=%d safety=%d liveness=%d setup=%d fired=%s regressions=%s ranges=%s rooted=%d cpu_ms=%d synced=%d",
		s.Scenario, s.Seeds, s.Wall.Milliseconds(), s.Safety, s.Liveness, s.Setup, strings.Join(fired, ","),
		joinSeeds(s.Regressions), ranges, s.Rooted, s.CPU.Milliseconds(), s.Synced)
}

// Check runs seeds 1..n of sc (n from -sim.seeds if set; only the seed
// of -sim.seed if set, drawn into the file of -sim.svg if that is set
// too) and fails t at the first failing seed, printing the commands that
// replay it and draw it, the fault plan, the faults injected and the end
// of the run's trace. It logs and returns the stats.
func Check(t testing.TB, sc Scenario, n int) Stats {
	t.Helper()
	if *seedFlag != 0 {
		var res Result
		if *svgFlag != "" {
			res = runTimeline(sc, *seedFlag)
			if path, err := writePicture(*svgFlag, res); err != nil {
				t.Errorf("sim: %s seed %d: drawing the picture: %v", sc.Name, res.Seed, err)
			} else {
				t.Logf("sim: %s seed %d: picture in %s", sc.Name, res.Seed, path)
			}
		} else {
			res = RunSeed(sc, *seedFlag, true)
		}
		var st Stats
		st.Scenario = sc.Name
		st.Add(res)
		if res.Err != nil {
			t.Error(Report(t, sc, res))
		} else {
			t.Log(describe(t, res, "passed"))
		}
		return st
	}
	if *seedsFlag > 0 {
		n = *seedsFlag
	}
	if n < 0 {
		t.Fatalf("sim.Check: negative seed count %d", n)
	}
	st := Stats{Scenario: sc.Name}
	start := time.Now()
	for seed := uint64(1); seed <= uint64(n); seed++ {
		res := RunSeed(sc, seed, false)
		st.Add(res)
		if res.Err != nil {
			st.Wall = time.Since(start)
			t.Error(Report(t, sc, res))
			return st
		}
	}
	st.Wall = time.Since(start)
	t.Log(st.String())
	return st
}

// Report describes a failed seed: what failed, the command that replays
// it, the plan, the faults injected and the end of the trace (the seed is
// run again with tracing on to get it; the history is the same).
func Report(t testing.TB, sc Scenario, res Result) string {
	if res.Trace == nil {
		traced := RunSeed(sc, res.Seed, true)
		if (traced.Err == nil) != (res.Err == nil) {
			return fmt.Sprintf("sim: %s seed %d: NOT DETERMINISTIC: failed with %v untraced, %v traced\nreplay: %s",
				sc.Name, res.Seed, res.Err, traced.Err, replayCommand(t, res.Seed))
		}
		res = traced
	}
	return describe(t, res, "FAILED ("+res.Kind.String()+")")
}

func describe(t testing.TB, res Result, verdict string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "sim: %s seed %d %s", res.Scenario, res.Seed, verdict)
	if res.Root != "" {
		fmt.Fprintf(&b, " (every client under the root %s)", res.Root)
	}
	if res.Err != nil {
		fmt.Fprintf(&b, ": %v", res.Err)
	}
	fmt.Fprintf(&b, "\nreplay: %s\n", replayCommand(t, res.Seed))
	fmt.Fprintf(&b, "picture: %s (an SVG timeline: faults, sessions, holds, the violation)\n", pictureCommand(t, res.Seed))
	fmt.Fprintf(&b, "%s; %s simulated", res.Plan, res.SimTime)
	if res.Err != nil {
		fmt.Fprintf(&b, ", first violation at %s", res.FailedAt)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "faults injected (%d):\n", len(res.Faults))
	for _, l := range tail(res.Faults, *tailFlag) {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	if len(res.Notes) > 0 {
		fmt.Fprintf(&b, "workload notes (last %d of %d):\n", min(len(res.Notes), tailLen(len(res.Notes))), len(res.Notes))
		for _, l := range tail(res.Notes, *tailFlag) {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	fmt.Fprintf(&b, "trace (last %d of %d events, hash %s; -sim.tail=0 prints all):\n",
		min(len(res.Trace), tailLen(len(res.Trace))), len(res.Trace), res.TraceHash)
	for _, l := range tail(res.Trace, *tailFlag) {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	return b.String()
}

func tailLen(n int) int {
	if *tailFlag <= 0 {
		return n
	}
	return *tailFlag
}

func tail(lines []string, k int) []string {
	if k <= 0 || len(lines) <= k {
		return lines
	}
	return lines[len(lines)-k:]
}

// replayCommand is the command that runs only this seed of the running
// test, traced: go test ./<package> -run '^<Test>$' -sim.seed=N -v
// (preceded by SIM_SEEDS=1 when the test runs with SIM_SEEDS set, as the
// large-run tests skip without it).
func replayCommand(t testing.TB, seed uint64) string {
	return seedCommand(t, seed) + " -v"
}

// pictureCommand is the command that draws this seed of the running test
// as an SVG timeline (-sim.svg; see timeline.WriteSVG), in the file
// seed<N>.svg of the test's package directory: replayCommand with
// -sim.svg instead of -v.
func pictureCommand(t testing.TB, seed uint64) string {
	return fmt.Sprintf("%s -sim.svg=seed%d.svg", seedCommand(t, seed), seed)
}

func seedCommand(t testing.TB, seed uint64) string {
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + p + "$"
	}
	env := ""
	if os.Getenv("SIM_SEEDS") != "" {
		env = "SIM_SEEDS=1 " // the large-run tests skip without it
	}
	return fmt.Sprintf("%sgo test %s -run '%s' -sim.seed=%d", env, testPackage(), strings.Join(parts, "/"), seed)
}

// testPackage finds the package of the calling test: the directory of
// the first _test.go file on the stack, relative to the module root.
func testPackage() string {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.File, "_test.go") {
			dir := filepath.Dir(f.File)
			for root := dir; ; {
				if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
					if rel, err := filepath.Rel(root, dir); err == nil {
						return "./" + filepath.ToSlash(rel)
					}
					break
				}
				up := filepath.Dir(root)
				if up == root {
					break
				}
				root = up
			}
			return dir
		}
		if !more {
			return "."
		}
	}
}

// firstFailure runs seeds from, from+1, ... up to max seeds and returns
// how many it ran up to and including the first that failed, with its
// result; found is false if none failed.
func firstFailure(sc Scenario, from uint64, max int) (n int, res Result, found bool) {
	for i := range max {
		res = RunSeed(sc, from+uint64(i), false)
		if res.Err != nil {
			return i + 1, res, true
		}
	}
	return max, Result{}, false
}

// Catch shows that the simulation catches a known bug: the caller plants
// it (a variant of the recipe, or a flag the recipe reads in tests) and
// runs the scenario through Catch, which hunts for a failing seed
// `hunts` times, over disjoint seed ranges, each within bound seeds, and
// fails t if a hunt comes back empty. It logs how many seeds each hunt
// ran up to the first failing one (counts, not seed numbers), the median
// and the worst, and returns those counts in hunt order.
func Catch(t testing.TB, sc Scenario, name string, hunts, bound int) []int {
	t.Helper()
	if hunts < 1 || bound < 1 {
		t.Fatalf("sim.Catch: hunts %d and bound %d must be at least 1", hunts, bound)
	}
	var needed []int
	for h := range hunts {
		from := uint64(h)*1_000_000 + 1
		n, res, found := firstFailure(sc, from, bound)
		if !found {
			t.Errorf("canary %s: not caught in seeds %d..%d", name, from, from+uint64(bound)-1)
			return needed
		}
		if h == 0 {
			t.Logf("canary %s: first catch, seed %d (%s): %v", name, res.Seed, res.Kind, firstLine(res.Err))
		}
		needed = append(needed, n)
	}
	sorted := slices.Clone(needed)
	slices.Sort(sorted)
	t.Logf("canary %s: seeds to catch over %d hunts: median %d, worst %d (each: %v; bound %d)",
		name, hunts, sorted[len(sorted)/2], sorted[len(sorted)-1], needed, bound)
	return needed
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Determinism runs each seed twice with tracing on and fails t for every
// seed whose two runs differ (server trace hash, faults injected,
// workload notes or outcome). It logs the pairs compared with a digest of
// the sample's histories (the first run's trace hash, faults, notes and
// outcome of every seed: two commits that must replay the same histories
// log the same digest), and returns the pairs compared.
func Determinism(t testing.TB, sc Scenario, seeds []uint64) int {
	t.Helper()
	mismatches := 0
	digest := sha256.New()
	for _, seed := range seeds {
		a, b := RunSeed(sc, seed, true), RunSeed(sc, seed, true)
		fmt.Fprintf(digest, "%d %s %q %q %v\n", seed, a.TraceHash, a.Faults, a.Notes, a.Err)
		if !sameRun(a, b) {
			mismatches++
			t.Errorf("sim: %s seed %d: two runs differ (trace %s vs %s, %d vs %d faults, outcome %v vs %v)\nreplay: %s",
				sc.Name, seed, a.TraceHash, b.TraceHash, len(a.Faults), len(b.Faults), a.Err, b.Err, replayCommand(t, seed))
		}
	}
	t.Logf("determinism: %s: %d pairs compared, %d mismatches; histories %x", sc.Name, len(seeds), mismatches, digest.Sum(nil)[:8])
	return len(seeds)
}

// sameRun reports whether two runs of one seed made one history.
func sameRun(a, b Result) bool {
	return a.TraceHash == b.TraceHash && slices.Equal(a.Faults, b.Faults) && slices.Equal(a.Notes, b.Notes) &&
		fmt.Sprint(a.Err) == fmt.Sprint(b.Err)
}

// Sample returns n seeds spread over 1..span (every span/n-th), for
// Determinism.
func Sample(n int, span uint64) []uint64 {
	if n <= 0 {
		return nil
	}
	step := max(span/uint64(n), 1)
	out := make([]uint64, n)
	for i := range out {
		out[i] = 1 + uint64(i)*step
	}
	return out
}

// pictures remembers, per file named by -sim.svg, the scenario whose
// picture it holds: the tests of one binary may Check several scenarios
// with -sim.seed (Explore checks each of its own), and each gets a file.
var pictures struct {
	sync.Mutex
	of map[string]string
}

// writePicture draws res's timeline into file, or, when file already
// holds another scenario's picture from this run, into file with the
// scenario's name added before its extension; it returns the absolute
// path written.
func writePicture(file string, res Result) (string, error) {
	if res.timeline == nil {
		return "", fmt.Errorf("nothing recorded: %v", res.Err) // the world was never built
	}
	pictures.Lock()
	defer pictures.Unlock()
	if pictures.of == nil {
		pictures.of = map[string]string{}
	}
	if sc, ok := pictures.of[file]; ok && sc != res.Scenario {
		ext := filepath.Ext(file)
		file = strings.TrimSuffix(file, ext) + "-" + fileSafe(res.Scenario) + ext
	}
	pictures.of[file] = res.Scenario
	var b bytes.Buffer
	if err := res.timeline.WriteSVG(&b); err != nil {
		return "", err
	}
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		return "", err
	}
	return filepath.Abs(file)
}

// fileSafe keeps letters, digits, '.', '_' and '-' of s, and turns
// anything else into '-' ("lock+id/5" is "lock-id-5").
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '-'
	}, s)
}

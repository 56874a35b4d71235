package sim

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/internal/canary"
)

// Regression is a seed of a scenario that once failed, kept so that every
// large run replays it (Scenario.Regressions). Why says what went wrong,
// for the report and for whoever reads the list.
type Regression struct {
	Seed uint64
	Why  string
	// Root is the root the seed failed under (Result.Root; "" for none):
	// Explore replays it under the same one.
	Root string
	// NoTwins: the seed failed before twins existed (Scenario.NoTwins);
	// it is replayed without them, so that it runs the history it was
	// recorded with even if the seed now draws twins.
	NoTwins bool
	// NoLagWatched: the seed failed before watched reads lagged in the
	// seeds that draw it (Plan.LagWatched); it is replayed without the
	// draw, for the same reason.
	NoLagWatched bool
	// NoRestartLag: the seed failed before a restarted process's session
	// could start on a lagging member (Scenario.NoRestartLag); it is
	// replayed without, for the same reason.
	NoRestartLag bool
	// ReconnectLag: the seed failed with a session that came back after a
	// cut through a lagging member (Scenario.NoReconnectLag off). Every
	// regression seed without it was recorded before that draw existed,
	// and is replayed without it, for the same reason.
	ReconnectLag bool
	// NoCounters and NoOperatorWrites: the seed failed before its
	// scenario took the counter classes (CounterFaults) or let the
	// operator write (Scenario.OperatorWrites); it is replayed without
	// them, for the same reason.
	NoCounters, NoOperatorWrites bool
	// NoOutageEnds: the seed failed before its scenario had contexts end
	// at connection losses (Scenario.OutageEnds); it is replayed without,
	// for the same reason.
	NoOutageEnds bool
	// NoActorLag: the seed failed before its scenario had goroutines
	// wake late (Scenario.ActorLag); it is replayed without, for the same
	// reason.
	NoActorLag bool
	// NoACL: the seed failed before its scenario took the acl class
	// (Scenario.ACL); it is replayed without, for the same reason.
	NoACL bool
	// SyncAfterReconnect: the seed failed with the executors' sync after
	// a reconnect on (SyncedSeed). Every regression seed without it is
	// replayed with it off (unless its scenario sets it), for the same
	// reason.
	SyncAfterReconnect bool
	// Blinks: the seed failed with the blink and operator-in-cut classes
	// (blink.go) and the lagging member after an outage's cut
	// (outage.go). Every regression seed without it was recorded before
	// they existed, and is replayed without them, for the same reason.
	Blinks bool
	// RemoveWatches: the seed failed with the remove-watches class
	// (RemoveWatch). Every regression seed without it was recorded before
	// the class existed, and is replayed without it, for the same reason.
	RemoveWatches bool
	// Canary, when set, names the canary (internal/canary) that puts the
	// fixed bug back. Regressions and Explore replay the seed with it on
	// as well, and fail unless the seed fails then: a regression seed whose
	// history moved (a change elsewhere in the scenario or the code it
	// runs) so that it no longer reaches the schedule it was kept for is
	// seen, not kept as a check that cannot fail.
	Canary string
}

var fromFlag = flag.Uint64("sim.from", 0, "first seed of the drawn range of every sim.Explore (0: from SIM_FROM, else from the commit in SIM_COMMIT, else a fixed offset)")

// fixedFrom is where the drawn range of Explore starts when neither
// -sim.from, SIM_FROM nor SIM_COMMIT says (a run outside a git checkout):
// the range is then the same on every run.
const fixedFrom = 1_000_000_000

// DrawnFrom returns the first seed of Explore's drawn range and where it
// came from: -sim.from, else SIM_FROM (a number), else the commit in
// SIM_COMMIT (its first 12 hex digits, above the fixed offset: each commit
// explores seeds no other commit does), else a fixed offset. For an
// explorer of one's own that draws its seeds as make sim does.
func DrawnFrom() (uint64, string) {
	if *fromFlag != 0 {
		return *fromFlag, "-sim.from"
	}
	if v := os.Getenv("SIM_FROM"); v != "" {
		if n, err := strconv.ParseUint(v, 10, 64); err == nil && n > 0 {
			return n, "SIM_FROM"
		}
	}
	if c := os.Getenv("SIM_COMMIT"); len(c) >= 12 {
		if n, err := strconv.ParseUint(c[:12], 16, 64); err == nil {
			return fixedFrom + n, "commit " + c[:12]
		}
	}
	return fixedFrom, "no commit in SIM_COMMIT (not a git checkout?): fixed offset"
}

// ExploreGCPercent is the garbage collector's target (GOGC) while Explore
// runs: a seed's live heap is small and short-lived, and at the default
// of 100 the collector took about a third of the CPU of a large run. At
// 1600 against 400 (farm-bench, the same test binary A B A B, 5 pairs,
// 2026-12-04, after recipes/lock's leak of whole worlds was fixed)
// Explore took 0.94x the CPU in fakezk/sim's scenarios, 0.90x in
// partition's and 0.94x in queue's, for a peak resident size of 144 MB
// against 40 MB in fakezk/sim, 115 against 40 in partition's, 106
// against 43 in queue's; at 6400 partition's took 1.00x and 283 MB.
const ExploreGCPercent = 1600

// exploreProcs is the number of threads running Go code (GOMAXPROCS)
// while Explore runs: a world runs on one goroutine at a time (its actors
// in lockstep with it), and with a second one free every hand-over of the
// turn between the world and an actor woke a thread to look for work:
// about a third of the CPU of the scenarios with actors, for nothing.
// make sim runs several test binaries at once to fill the cores.
const exploreProcs = 1

// Explore is the large run of make sim for each scenario: its regression
// seeds (every one, each failure reported; one that names its canary,
// also with the canary on, as Regressions does), seeds 1..n (the fixed range,
// the same on every run) and n seeds from a range drawn from the commit
// (SIM_COMMIT: new seeds for every commit), n from SIM_SEEDS; the two ranges stop at their first failing
// seed. One seed in four of each range runs with every client under a
// chroot (ExploreRoot), and one in four, drawn apart, with the executors'
// sync after a reconnect on (SyncedSeed). One seed in replayEvery (200) of either range is
// run twice more with its trace, and a seed whose two histories differ
// fails t (the scenario's TestSimDeterminism samples only a few). After
// a scenario's seeds it checks that their executors and servers are
// garbage, but for the last seeds' (freed.go). It skips t when SIM_SEEDS
// is unset, runs only -sim.seed when that is set, and logs a line of each
// scenario's Stats for internal/simsum. Unless GOGC is set, it runs with the garbage
// collector's target at ExploreGCPercent, and unless GOMAXPROCS is set,
// on exploreProcs threads (both restored when it returns). With SIM_HASHES
// set it also records every seed's trace hash in that file (hashFile),
// and with SIM_FROM set too the drawn range is the same on every commit:
// a change that must not alter any history compares two such files.
func Explore(t *testing.T, scs ...Scenario) []Stats {
	t.Helper()
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(ExploreGCPercent))
	}
	if os.Getenv("GOMAXPROCS") == "" {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(exploreProcs))
	}
	n, _ := strconv.Atoi(os.Getenv("SIM_SEEDS"))
	if n <= 0 {
		t.Skip("SIM_SEEDS not set")
	}
	if *seedsFlag > 0 {
		n = *seedsFlag
	}
	from, source := DrawnFrom()
	t.Logf("SIMRANGE fixed=1-%d drawn=%d-%d source=%q", n, from, from+uint64(n)-1, source)
	var all []Stats
	for _, sc := range scs {
		if *seedFlag != 0 {
			all = append(all, Check(t, explored(sc, *seedFlag), 1))
			continue
		}
		st := Stats{Scenario: sc.Name, Ranges: []string{fmt.Sprintf("1-%d", n), fmt.Sprintf("%d-%d", from, from+uint64(n)-1)}}
		start, cpu := time.Now(), processCPU()
		for _, reg := range sc.Regressions {
			st.Regressions = append(st.Regressions, reg.Seed)
			rsc := explored(sc, reg.Seed)
			res := RunSeed(rsc, reg.Seed, false)
			st.Add(res)
			if res.Err != nil {
				t.Errorf("regression seed %d of %s (%s) fails again:\n%s", reg.Seed, sc.Name, reg.Why, Report(t, rsc, res))
			}
			if reg.Canary != "" && !reaches(rsc, reg) {
				t.Errorf("regression seed %d of %s passes with its canary %s on: it no longer reaches the schedule it was kept for (%s)", reg.Seed, sc.Name, reg.Canary, reg.Why)
			}
		}
		var replay []uint64
		hashes := hashFile(t)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mallocs := ms.Mallocs
		execs := new(execTally)
		tally.Store(execs)
		perSeed := int64(0) // the most executors and servers one seed made
		for _, first := range []uint64{1, from} {
			for seed := first; seed < first+uint64(n); seed++ {
				esc := explored(sc, seed)
				made := execs.made.Load()
				res := RunSeed(esc, seed, hashes != nil)
				perSeed = max(perSeed, execs.made.Load()-made)
				st.Add(res)
				if hashes != nil {
					fmt.Fprintf(hashes, "%s %d %s\n", sc.Name, seed, res.TraceHash)
				}
				if res.Err != nil {
					t.Error(Report(t, esc, res))
					break
				}
				if seed%replayEvery == 0 {
					replay = append(replay, seed)
				}
			}
		}
		st.Wall, st.CPU = time.Since(start), processCPU()-cpu
		runtime.ReadMemStats(&ms)
		st.Allocs = ms.Mallocs - mallocs
		if hashes != nil {
			if err := hashes.Close(); err != nil {
				t.Errorf("sim: SIM_HASHES: %v", err)
			}
		}
		tally.Store(nil)
		// The scenario may keep its last seed's world (its state for the
		// next seed); nothing keeps more.
		if live := execs.reachable(2 * perSeed); live > 2*perSeed {
			t.Errorf("sim: %s: %d of the %d executors and servers its seeds made are still reachable after %d collections (at most %d, the last seeds', may be): something outside the worlds keeps them (per-executor state in a package-level variable?)",
				sc.Name, live, execs.made.Load(), maxCollections, 2*perSeed)
		}
		t.Log(st.String())
		t.Log(st.line())
		// One seed in replayEvery, across both ranges, is run twice more
		// and its histories compared (outside the scenario's figures): a
		// seed that does not replay is a failure wherever it lies.
		mismatches := 0
		for _, seed := range replay {
			esc := explored(sc, seed)
			a, b := RunSeed(esc, seed, true), RunSeed(esc, seed, true)
			if !sameRun(a, b) {
				mismatches++
				t.Errorf("sim: %s seed %d: two runs differ (trace %s vs %s, %d vs %d faults, outcome %v vs %v)\nreplay: %s",
					sc.Name, seed, a.TraceHash, b.TraceHash, len(a.Faults), len(b.Faults), a.Err, b.Err, replayCommand(t, seed))
			}
		}
		t.Logf("determinism: %s (explored, one seed in %d): %d pairs compared, %d mismatches", sc.Name, replayEvery, len(replay), mismatches)
		all = append(all, st)
	}
	return all
}

// hashFile opens the file SIM_HASHES names, for appending, or returns nil
// if it is unset. With it Explore runs every seed with its trace and
// writes one line per seed: the scenario, the seed and its trace's hash
// (Result.TraceHash). Two runs' files are equal when a change (a
// speed-up, say) left every history as it was: compare them with cmp.
func hashFile(t *testing.T) *os.File {
	name := os.Getenv("SIM_HASHES")
	if name == "" {
		return nil
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatalf("sim: SIM_HASHES: %v", err)
	}
	return f
}

// replayEvery: Explore replays one seed in replayEvery.
const replayEvery = 200

// Regressions runs every regression seed of each scenario and fails t for
// each that fails again (the unit run's share of Explore: cheap, and it
// runs without SIM_SEEDS). A seed that names its canary
// (Regression.Canary) is run again with the canary on, and fails t if it
// passes then: it no longer reaches its schedule. The canary is switched
// on for the whole process while that seed runs: run Regressions in no
// parallel test.
func Regressions(t *testing.T, scs ...Scenario) {
	t.Helper()
	for _, e := range regressionErrs(t, scs) {
		t.Error(e)
	}
}

// regressionErrs runs the regression seeds of scs as Regressions does and
// returns what it reports.
func regressionErrs(t testing.TB, scs []Scenario) []string {
	var errs []string
	for _, sc := range scs {
		for _, reg := range sc.Regressions {
			rsc := explored(sc, reg.Seed)
			if res := RunSeed(rsc, reg.Seed, false); res.Err != nil {
				errs = append(errs, fmt.Sprintf("regression seed %d of %s (%s) fails again:\n%s", reg.Seed, sc.Name, reg.Why, Report(t, rsc, res)))
			}
			if reg.Canary != "" && !reaches(rsc, reg) {
				errs = append(errs, fmt.Sprintf("regression seed %d of %s passes with its canary %s on: it no longer reaches the schedule it was kept for (%s)", reg.Seed, sc.Name, reg.Canary, reg.Why))
			}
		}
	}
	return errs
}

// reaches reports whether the regression seed reg of rsc (explored)
// fails with its canary on.
func reaches(rsc Scenario, reg Regression) bool {
	restore := canary.Enable(canary.Name(reg.Canary))
	defer restore()
	return RunSeed(rsc, reg.Seed, false).Err != nil
}

func joinSeeds(seeds []uint64) string {
	if len(seeds) == 0 {
		return "-"
	}
	parts := make([]string, len(seeds))
	for i, s := range seeds {
		parts[i] = strconv.FormatUint(s, 10)
	}
	return strings.Join(parts, ",")
}

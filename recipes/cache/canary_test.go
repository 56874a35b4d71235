package cache

import (
	"slices"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
)

// canaryBound is the most seeds a canary may survive in each of
// canaryHunts disjoint seed ranges. cache/no-relist-saturated needed 346
// seeds in the first hunt since the lag class changed the histories of
// the seeds that draw it (125 before); cache/next-lost-beside-another
// 603 in the second since the blink class did (157, 603 and 48 in three
// hunts to 3,000; 202, 285 and 286 without the class).
const (
	canaryBound = 1000
	canaryHunts = 3
)

// The simulation passes with every known bug off.
func TestSimulation(t *testing.T) {
	s, sc := newCacheSim()
	st := sim.Check(t, sc, simSeeds())
	t.Logf("over %d seeds: %d OnEvents, %d Nexts, %d re-created nodes reported by Next, %d caches ended by an ACL's refusal and built again", st.Seeds, s.events, s.nexts, s.recreated, s.refused)
	if !t.Failed() && s.recreated == 0 {
		t.Errorf("no seed reported a re-created node: the scenario does not exercise czxid comparison")
	}
}

// The seeds that once failed (Scenario.Regressions), on every unit run:
// both scenarios, this one and the blocking face's (blocking_sim_test.go).
func TestSimRegressions(t *testing.T) {
	_, sc := newCacheSim()
	_, bsc := newBlockingCacheSim()
	sim.Regressions(t, sc, bsc)
}

// Each known bug, switched back on, is caught by the simulation; sim.Catch
// logs the seeds each hunt needed for the first catch.
func TestCanaries(t *testing.T) {
	for _, name := range []canary.Name{bugVersionOnly, bugNoRearmAfterLoss, bugNoResync, bugRecursiveNoReread, bugRecursiveCreatedIsNew, bugStaleParentStat, bugNoRelistSaturated, bugServeDuringResync} {
		t.Run(string(name), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			_, sc := newCacheSim()
			sim.Catch(t, sc, string(name), canaryHunts, canaryBound)
		})
	}
	// The blocking Client's bugs are hunted by the blocking scenario: a
	// Next whose context ends as its difference is handed over loses it,
	// alone or when a second goroutine's Next is served in between.
	for _, name := range []canary.Name{bugNextLostOnCancel, bugNextLostBesideAnother} {
		t.Run(string(name), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			_, sc := newBlockingCacheSim()
			sim.Catch(t, sc, string(name), canaryHunts, canaryBound)
		})
	}
}

// cache/no-sync-new-session is hunted with a bound of its own: the
// scenario aims an expiry at its reader just after a snapshot, its next
// session on a member behind it (aimExpire), in the seeds whose plan has
// the expire class and watched reads lag (a seed in eight); before, the
// injector's expiries caught it in 325, 39 and 181 seeds.
func TestCanaryNoSyncNewSession(t *testing.T) {
	restore := canary.Enable(bugNoSyncNewSession)
	defer restore()
	_, sc := newCacheSim()
	sim.Catch(t, sc, string(bugNoSyncNewSession), 12, 100)
}

// The directed schedule of TestAdv4ClientNextCanceledAsChangeArrives
// loses the difference with cache/next-lost-on-cancel on: that test can
// fail.
func TestCanaryNextLostOnCancelDirected(t *testing.T) {
	restore := canary.Enable(bugNextLostOnCancel)
	defer restore()
	if _, added := nextCanceledAsHandedOver(t); slices.Contains(added, "/d/x") {
		t.Errorf("with %s on, the next Next still reported /d/x added (%v): the directed test cannot catch it", bugNextLostOnCancel, added)
	}
}

// The same seed gives the same history (server trace, faults, outcome,
// the actors included): both scenarios.
func TestSimDeterminism(t *testing.T) {
	_, sc := newCacheSim()
	sim.Determinism(t, sc, sim.Sample(5, 200))
	_, bsc := newBlockingCacheSim()
	sim.Determinism(t, bsc, sim.Sample(6, 1000))
}

// The large run of make sim: SIM_SEEDS seeds of each scenario (skipped
// when unset).
func TestSimExplore(t *testing.T) {
	_, sc := newCacheSim()
	_, bsc := newBlockingCacheSim()
	sim.Explore(t, sc, bsc)
}

// cache/pass-while-setting-watch: once rare in the random plans (seeds
// 1394, then 3255), none of 40,000 seeds of the cache and cache/blocking
// scenarios reaches it since a new session's reads wait for its sync (the
// window was mostly there), nor 10,000 seeds of cache and 5,000 of
// cache/blocking drawn as Explore draws them (every fault class, rooted
// and synced seeds): its regression seeds 1394 and 61000273 pass with it
// on and name no canary. Nor does an aimed fault alone: the watch is set
// again beside a pass only when a removal ends it, and the only removal
// in the scenario, a replaced cache's on client 3, is applied before the
// new cache's AddWatch unless a cut loses it and its retry comes during
// the new cache's first pass (fakezk/sim/PROTOCOL.md, Canaries). The
// directed test TestRecursiveWatchSetAgainDuringAPass catches it (its
// canary subtest).

// cache/recursive-no-recheck is rare in the random plans: seed 10400147
// (of about 3,300 with the acl class) found it, and no longer reaches it
// since a recursive cache's read that finds a node gone reads its parent
// again; seed 975, of the fixed range as Explore draws it, does (a hunt
// of seeds 1..2,085 with the canary on caught it five times, each under
// the acl class). Without its re-reads, the recursive cache keeps a node
// deleted while an operator's ACL hid it from the session, and its
// parent's Stat from before, after the ACL is back.
func TestCanaryRecursiveNoRecheck(t *testing.T) {
	restore := canary.Enable(bugRecursiveNoRecheck)
	defer restore()
	_, sc := newCacheSim()
	sc.Regressions = nil // the seed as drawn
	const seed = 975
	if sim.RootedSeed(seed) {
		sc.Root = sim.ExploreRoot
	}
	if sim.SyncedSeed(seed) {
		sc.SyncAfterReconnect = true
	}
	res := sim.RunSeed(sc, seed, false)
	if res.Err == nil {
		t.Fatalf("seed %d passes with the bug: the scenario no longer reaches a withheld delete under the recursive cache", seed)
	}
	t.Logf("seed %d: %v", seed, res.Err)
}

// cache/pass-before-sync is rare in the random plans: seed
// 116802994807290 found it (make test on 6a3b156, after about 270,000
// seeds) and no longer reaches it; seed 58766871, a regression seed that
// names the canary (sim_test.go), does, with the fault classes and flags
// of a drawn seed (as Explore draws them: every class on, a root and the
// sync after a reconnect as RootedSeed and SyncedSeed say); about one
// seed in 60,000 hunted. With the bug, a reconnect of a new session
// before its sync relists the saturated directories from a member behind
// the old session's reads, and a snapshot loses a child.
func TestCanaryPassBeforeSync(t *testing.T) {
	const seed = 58766871
	canarytest.Both(t, bugPassBeforeSync, func(t *testing.T, bug bool) {
		_, sc := newCacheSim()
		sc.Regressions = nil // the seed as drawn, as its entry replays it
		if sim.RootedSeed(seed) {
			sc.Root = sim.ExploreRoot
		}
		if sim.SyncedSeed(seed) {
			sc.SyncAfterReconnect = true
		}
		res := sim.RunSeed(sc, seed, false)
		switch {
		case bug && res.Err == nil:
			t.Fatalf("seed %d passes with the bug: the scenario no longer reaches a reconnect before a new session's sync", seed)
		case !bug && res.Err != nil:
			t.Fatalf("seed %d: %v", seed, res.Err)
		case bug:
			t.Logf("seed %d: %s", seed, strings.SplitN(res.Err.Error(), "\n", 2)[0])
		}
	})
}

package main

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// scenario: three clients take the lock of lock.go in a loop, and in
// each critical section write "enter", wait, and write "exit" to a
// fencing log, each write in a multi that checks their lock node exists
// (sim.FencedEntry, the lock recipe's own judge). Under every fault class
// but the operator's, with creates' replies often lost: in the order the
// server applied the writes, the holders' tokens (their nodes' sequence
// numbers) never go down, so no two critical sections interleave, and
// no two holders share one (sim.CheckFencing); and every client takes the lock again once the faults
// stop.
func scenario(counts *sim.Counts, sections *int) sim.Scenario {
	return lockScenario(counts, sections, false)
}

// deadlineScenario is scenario with half the Locks given a deadline of
// up to 300 ms, which often passes while they wait, sometimes before
// their create's reply comes: such a Lock gives up, and must leave no
// node behind (Lock's cleanup, a flow of its own). Judged as scenario is,
// and besides: once the workload has wound down, no node is left in the
// lock's directory (Quiesce), a client's next Lock never waits behind a
// node its session left (liveness), and every node there is deleted only
// by its own session (OwnDeletes: the cleanup, which finds a node by its
// guid, never takes another's).
func deadlineScenario(counts *sim.Counts, sections *int) sim.Scenario {
	return lockScenario(counts, sections, true)
}

func lockScenario(counts *sim.Counts, sections *int, deadlines bool) sim.Scenario {
	if counts == nil {
		counts, sections = &sim.Counts{}, new(int)
	}
	lossy := &sim.LostReplies{Counts: counts}
	var ended []bool // per client: its loop has stopped
	// round takes the lock and runs a critical section; it says whether it
	// entered it (a Lock whose deadline passed did not).
	round := func(r *sim.Trial, i int) task.Task[bool] {
		return task.Flow(func(f *task.F) (bool, error) {
			var node string
			var err error
			if deadlines && r.Rand.IntN(2) == 0 {
				d := 1 + time.Duration(r.Rand.Int64N(int64(300*time.Millisecond)))
				node, err = task.Await(f, c.Timeout(task.Flow(func(f *task.F) (string, error) { return Lock(f, "/lock") }), d))
				if errors.Is(err, task.ErrDeadlineExceeded) {
					return false, nil // gave up waiting
				}
			} else {
				node, err = Lock(f, "/lock")
			}
			if err != nil {
				return false, err
			}
			token, _ := strconv.ParseInt(seq(node), 10, 64)
			for _, kind := range []string{"enter", "exit"} {
				if _, err := retry(f, task.Multi(task.CheckOp(node, task.AnyVersion), sim.FencedEntry("/log", token, kind))); err != nil {
					return false, err
				}
				if _, err := task.Await(f, c.Sleep(time.Duration(r.Rand.Int64N(int64(100*time.Millisecond))))); err != nil {
					return false, err
				}
			}
			return true, Unlock(f, node)
		})
	}
	var loop func(r *sim.Trial, i int)
	loop = func(r *sim.Trial, i int) {
		if r.Stopping() || r.Closing() {
			ended[i] = true
			return
		}
		executor.Submit(r.Execs[i], round(r, i), func(entered bool, err error) {
			switch {
			case r.Closing():
				return
			case err == nil:
				if entered {
					r.Progress(i)
				}
			case !errors.Is(err, task.ErrSessionExpired):
				r.Errorf("client %d: %v", i, err)
			}
			loop(r, i)
		})
	}
	sc := sim.Scenario{
		Name:    "lockflow/3",
		Clients: 3,
		Regressions: []sim.Regression{
			{Seed: 1362, ReconnectLag: true, Why: "liveness: a create whose reply a cut lost, the session back through a member that had not applied it: Lock's listing missed our node, made a second one and waited behind its own first (Lock now syncs before that listing)"},
		},
		Faults:   sim.Faults{Allow: sim.AllFaults &^ sim.Of(sim.Operator)},
		Duration: 5 * time.Second,
		Wrap:     lossy.Wrap,
		Setup: func(r *sim.Trial) error {
			ended = make([]bool, len(r.Execs))
			lossy.World, lossy.Rand, lossy.Rate = r.World, r.Rand, 0 // no loss in the setup
			for _, dir := range []string{"/lock", "/log"} {
				if _, err := sim.Run(r.World, 0, task.Create(dir, nil, task.Persistent)); err != nil {
					return err
				}
			}
			return nil
		},
		Workload: func(r *sim.Trial) {
			lossy.Rate = 0.1
			for i := range r.Execs {
				loop(r, i)
			}
		},
		Restart: loop,
		Invariants: []sim.Invariant{sim.InvariantFunc(func(r *sim.Trial) error {
			n, err := sim.CheckFencing(r.World, "/log")
			*sections += n
			return err
		})},
	}
	if deadlines {
		sc.Name, sc.Regressions = "lockflow/deadlines", nil
		sc.Quiesce = func(r *sim.Trial) bool { return !slices.Contains(ended, false) && len(r.Children("/lock")) == 0 }
		sc.OwnDeletes = []string{"/lock"}
	}
	return sc
}

func TestLockUnderFaults(t *testing.T) {
	n := 30
	if testing.Short() {
		n = 8
	}
	var counts sim.Counts
	sections := 0
	if sim.Check(t, scenario(&counts, &sections), n).Failures() > 0 {
		return
	}
	t.Logf("%d seeds, %d critical sections, %d replies lost", n, sections, counts.Losses)
	if counts.Losses == 0 || sections < n {
		t.Fatal("the faults never bit or the lock was seldom taken: the scenario checks little")
	}
}

func TestLockWithDeadlinesUnderFaults(t *testing.T) {
	n := 30
	if testing.Short() {
		n = 8
	}
	var counts sim.Counts
	sections := 0
	if sim.Check(t, deadlineScenario(&counts, &sections), n).Failures() > 0 {
		return
	}
	t.Logf("%d seeds, %d critical sections, %d replies lost", n, sections, counts.Losses)
	if counts.Losses == 0 || sections < n {
		t.Fatal("the faults never bit or the lock was seldom taken: the scenario checks little")
	}
}

// make sim: many seeds (SIM_SEEDS), and one seed, one history.
func TestSimExplore(t *testing.T) { sim.Explore(t, scenario(nil, nil), deadlineScenario(nil, nil)) }

func TestSimDeterminism(t *testing.T) { sim.Determinism(t, scenario(nil, nil), sim.Sample(20, 2000)) }

package sim_test

import (
	"encoding/binary"
	"strconv"
	"strings"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

func TestCounterScenario(t *testing.T) {
	sc := counterScenario()
	st := sim.Check(t, sc, 200)
	for _, cl := range sim.Classes() {
		if sc.Faults.Allow.Has(cl) && st.Fired[cl] == 0 {
			t.Errorf("fault class %s never fired in %d seeds", cl, st.Seeds)
		}
	}
}

// blindIncr is incr with the bug the simulation must catch: the write
// ignores the version it read (-1: any), so two clients can both add one
// to the same value.
func blindIncr(path string) task.Task[int64] {
	round := c.Then(task.Get(path), func(d task.Data) task.Task[int64] {
		v := int64(binary.BigEndian.Uint64(d.Data)) + 1
		return c.Map(task.Set(path, binary.BigEndian.AppendUint64(nil, uint64(v)), -1), func(task.Stat) int64 { return v })
	})
	return c.Retry(round, c.Policy{On: []error{task.ErrBadVersion, task.ErrConnectionLoss, task.ErrNotSent}})
}

func TestCatchesBlindWrite(t *testing.T) {
	sc := counterScenario()
	incrTask = blindIncr
	defer func() { incrTask = incr }()
	n, res, found := sim.FirstFailure(sc, 1, 100)
	if !found {
		t.Fatal("a blind write was not caught in 100 seeds")
	}
	if !strings.Contains(res.Err.Error(), "twice") && !strings.Contains(res.Err.Error(), "linearizable") {
		t.Fatalf("caught for another reason: %v", res.Err)
	}
	t.Logf("caught after %d seeds: %v", n, res.Err)
}

// A failing seed's report names the command that replays it and the one
// that draws it, and shows the faults and the end of the trace, from a
// traced re-run.
func TestReportReplays(t *testing.T) {
	t.Setenv("SIM_SEEDS", "") // set, the replay line names it (checked below with it unset)
	sc := counterScenario()
	incrTask = blindIncr
	defer func() { incrTask = incr }()
	_, res, found := sim.FirstFailure(sc, 1, 100)
	if !found {
		t.Fatal("not caught")
	}
	msg := sim.Report(t, sc, res)
	want := "go test ./fakezk/sim -run '^TestReportReplays$' -sim.seed=" + strconv.FormatUint(res.Seed, 10) + " -v"
	picture := "picture: go test ./fakezk/sim -run '^TestReportReplays$' -sim.seed=" + strconv.FormatUint(res.Seed, 10) +
		" -sim.svg=seed" + strconv.FormatUint(res.Seed, 10) + ".svg"
	for _, s := range []string{want, picture, "FAILED (safety)", "first violation at", "faults injected", "trace (last", " apply #"} {
		if !strings.Contains(msg, s) {
			t.Errorf("report lacks %q:\n%s", s, msg)
		}
	}
	// The traced re-run is the same history as the first run.
	a, b := sim.RunSeed(sc, res.Seed, true), sim.RunSeed(sc, res.Seed, false)
	if a.Err == nil || b.Err == nil || a.Err.Error() != b.Err.Error() || len(a.Trace) == 0 {
		t.Errorf("traced and untraced runs differ: %v / %v", a.Err, b.Err)
	}
}

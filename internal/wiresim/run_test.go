package wiresim_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/internal/wiresim"
)

// A seed fixes its plan: the same faults at the same instants on the
// same clients for the same lengths; another seed draws another plan.
// Plans are in time order, within the workload's duration, of the
// allowed classes only, and partitions are short or long against the
// session timeout as their class says.
func TestPlanFromSeed(t *testing.T) {
	sc := wiresim.Scenario{Faults: wiresim.AllClasses}
	const timeout = 500 * time.Millisecond // 20 ticks of 25ms
	empty, differ := 0, 0
	for seed := uint64(1); seed <= 400; seed++ {
		p := wiresim.DrawPlan(sc, seed)
		if q := wiresim.DrawPlan(sc, seed); p.String() != q.String() {
			t.Fatalf("seed %d drew %v, then %v", seed, p, q)
		}
		if p.String() != wiresim.DrawPlan(sc, seed+1).String() {
			differ++
		}
		if len(p) == 0 {
			empty++
		}
		for i, f := range p {
			if f.At < 0 || f.At >= 300*time.Millisecond || i > 0 && f.At < p[i-1].At {
				t.Fatalf("seed %d: fault %v out of order or of the workload's time: %v", seed, f, p)
			}
			if f.Client < 0 || f.Client >= 3 {
				t.Fatalf("seed %d: fault on client %d", seed, f.Client)
			}
			if f.Class == wiresim.Partition && f.For >= timeout || f.Class == wiresim.LongPartition && f.For <= timeout {
				t.Fatalf("seed %d: %v against a session timeout of %s", seed, f, timeout)
			}
		}
	}
	if empty < 400/16/3 || empty > 400/16*3 || differ < 390 {
		t.Fatalf("%d plans of 400 without a fault (one in sixteen expected), %d differ from the next seed's", empty, differ)
	}
	only := wiresim.Scenario{Faults: wiresim.Of(wiresim.Expire)}
	for seed := uint64(1); seed <= 50; seed++ {
		for _, f := range wiresim.DrawPlan(only, seed) {
			if f.Class != wiresim.Expire {
				t.Fatalf("seed %d drew %v, not allowed", seed, f)
			}
		}
	}
}

// quick is a scenario of one client and no fault that ends at once.
func quick(client func(r *wiresim.Run, ctx context.Context, i int)) wiresim.Scenario {
	return wiresim.Scenario{Name: "quick", Clients: 1, Duration: 20 * time.Millisecond, Recovery: 300 * time.Millisecond, Client: client}
}

// The clients' randomness is the seed's; a failed seed's kind says what
// failed: a violation (Errorf) or a failed Check is safety, no progress
// within Recovery is liveness, a failed Setup is setup; and the report
// names the seed, its plan and the command that runs it again.
func TestRunOutcomes(t *testing.T) {
	draw := func(r *wiresim.Run, ctx context.Context, i int) {
		r.Count("draw", int(r.Rand(i).Uint64()%1_000_000))
		for ctx.Err() == nil {
			r.Progress(i)
			r.Sleep(ctx, 5*time.Millisecond)
		}
	}
	a, b, c := wiresim.RunSeed(quick(draw), 7, false), wiresim.RunSeed(quick(draw), 7, false), wiresim.RunSeed(quick(draw), 8, false)
	if a.Err != nil || b.Err != nil || c.Err != nil {
		t.Fatal(a.Err, b.Err, c.Err)
	}
	if a.Counts["draw"] != b.Counts["draw"] || a.Counts["draw"] == c.Counts["draw"] {
		t.Fatalf("client draws %d, %d for seed 7 and %d for seed 8", a.Counts["draw"], b.Counts["draw"], c.Counts["draw"])
	}

	bad := wiresim.RunSeed(quick(func(r *wiresim.Run, ctx context.Context, i int) {
		r.Errorf("planted violation")
		<-ctx.Done()
	}), 3, false)
	if bad.Kind != wiresim.Safety || !strings.Contains(bad.Err.Error(), "planted violation") {
		t.Fatalf("a violation: %v %v", bad.Kind, bad.Err)
	}
	rep := wiresim.Report(bad, "TestX", 10)
	for _, want := range []string{"quick seed 3 failed (safety)", "-wiresim.seed=3", "plan: ", "VIOLATION planted violation"} {
		if !strings.Contains(rep, want) {
			t.Fatalf("the report lacks %q:\n%s", want, rep)
		}
	}

	sc := quick(draw)
	sc.Check = func(*wiresim.Run) error { return errors.New("planted check") }
	if res := wiresim.RunSeed(sc, 3, false); res.Kind != wiresim.Safety || !strings.Contains(res.Err.Error(), "planted check") {
		t.Fatalf("a failed check: %v %v", res.Kind, res.Err)
	}

	stuck := wiresim.RunSeed(quick(func(r *wiresim.Run, ctx context.Context, i int) { <-ctx.Done() }), 3, false)
	if stuck.Kind != wiresim.Liveness {
		t.Fatalf("no progress: %v %v", stuck.Kind, stuck.Err)
	}

	sc = quick(draw)
	sc.Setup = func(*wiresim.Run, context.Context) error { return errors.New("planted setup") }
	if res := wiresim.RunSeed(sc, 3, false); res.Kind != wiresim.SetupFailed {
		t.Fatalf("a failed setup: %v %v", res.Kind, res.Err)
	}
}

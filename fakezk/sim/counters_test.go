package sim_test

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// seqScenario: each client creates a sequential child of /d (creating /d
// again when it is gone) and deletes it, in a loop; a note records every
// name handed out.
func seqScenario(allow sim.FaultSet) sim.Scenario {
	const dir = "/d"
	create := task.Create(dir+"/n-", nil, task.PersistentSequential)
	round := c.Then(c.OnError(create, func(error) task.Task[string] {
		mk := c.OnError(task.Create(dir, nil, task.Persistent), func(error) task.Task[string] { return task.Value(dir) },
			task.ErrNodeExists)
		return c.Then(mk, func(string) task.Task[string] { return create })
	}, task.ErrNoNode), func(p string) task.Task[string] {
		return c.Map(task.Delete(p, -1), func(task.Unit) string { return p })
	})
	var loop func(r *sim.Trial, i int)
	loop = func(r *sim.Trial, i int) {
		if r.Stopping() || r.Closing() {
			return
		}
		executor.Submit(r.Execs[i], c.Seq(c.Sleep(50*time.Millisecond), round), func(p string, err error) {
			if err == nil {
				r.Logf("name %s", p)
				r.Progress(i)
			}
			loop(r, i)
		})
	}
	return sim.Scenario{
		Name:     "seq",
		Clients:  2,
		Faults:   sim.Faults{Allow: allow, MaxRate: 0.05},
		Duration: 5 * time.Second,
		Counters: []string{dir},
		Setup: func(r *sim.Trial) error {
			_, err := sim.Run(r.World, 0, task.Create(dir, nil, task.Persistent))
			return err
		},
		Workload: func(r *sim.Trial) {
			for i := range 2 {
				loop(r, i)
			}
		},
		Restart: func(r *sim.Trial, i int) { loop(r, i) },
	}
}

// sequenceNumbers returns the numbers of the names a seqScenario run
// noted, in order.
func sequenceNumbers(res sim.Result) []int64 {
	var out []int64
	for _, n := range res.Notes {
		if _, name, ok := strings.Cut(n, "name /d/n-"); ok {
			v, _ := strconv.ParseInt(name, 10, 64)
			out = append(out, v)
		}
	}
	return out
}

// The counter classes do what they say: Counters brings the names to
// int32's maximum (where they stay, ZooKeeper 3.8's behaviour), EmptyDir
// deletes the empty directory so that the names start again from 0.
func TestCounterClasses(t *testing.T) {
	sc := seqScenario(sim.CounterFaults)
	var st sim.Stats
	atMax, restarted := 0, 0
	for seed := uint64(1); seed <= 40; seed++ {
		res := sim.RunSeed(sc, seed, false)
		if res.Err != nil {
			t.Fatalf("seed %d: %v", seed, res.Err)
		}
		st.Add(res)
		nums := sequenceNumbers(res)
		for k, v := range nums {
			if v == math.MaxInt32 {
				atMax++
			}
			if k > 0 && v < nums[k-1] {
				restarted++
			}
		}
		if res.FiredOf(sim.Counters)+res.FiredOf(sim.EmptyDir) > 0 && res.Plan.On&sim.CounterFaults == 0 {
			t.Errorf("seed %d: counter faults fired with a plan without them: %v", seed, res.Plan)
		}
	}
	if st.Fired[sim.Counters] == 0 || st.Fired[sim.EmptyDir] == 0 {
		t.Fatalf("fired: %s", sim.FiredString(st))
	}
	if atMax == 0 {
		t.Errorf("no name reached %d after %d counters faults", math.MaxInt32, st.Fired[sim.Counters])
	}
	if restarted == 0 {
		t.Errorf("no name came lower than the one before after %d empty-dir faults", st.Fired[sim.EmptyDir])
	}
}

// A scenario that allows a counter class names its directories.
func TestCounterClassesNeedDirectories(t *testing.T) {
	sc := seqScenario(sim.Of(sim.Counters))
	sc.Counters = nil
	if res := sim.RunSeed(sc, 1, false); res.Kind != sim.SetupFailed {
		t.Fatalf("got %v (%v), want a setup failure", res.Kind, res.Err)
	}
}

// The counter classes draw from a stream of their own: a seed whose plan
// has neither runs the history it ran before a scenario allowed them,
// and so does a seed whose plan has no twins when twins are allowed.
func TestNewClassesKeepHistory(t *testing.T) {
	before := seqScenario(sim.AllFaults)
	before.NoTwins = true
	after := seqScenario(sim.AllFaults | sim.CounterFaults)
	compared, twins := 0, 0
	for seed := uint64(1); seed <= 200; seed++ {
		b := sim.RunSeed(before, seed, true)
		a := sim.RunSeed(after, seed, true)
		if a.Plan.Twin != nil {
			twins++
		}
		if a.Plan.On&sim.CounterFaults != 0 || a.Plan.Twin != nil {
			continue
		}
		compared++
		if a.TraceHash != b.TraceHash || strings.Join(a.Faults, "\n") != strings.Join(b.Faults, "\n") {
			t.Errorf("seed %d (%v): history changed", seed, a.Plan)
		}
	}
	if compared < 20 || twins == 0 {
		t.Fatalf("compared %d seeds, %d with twins", compared, twins)
	}
}

// Twins draw the same random numbers; others do not.
func TestTwins(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 9, Clients: 3, Twin: &sim.Twin{Of: 0, Client: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	draw := func(i int) uint64 {
		v, err := sim.Run(w, i, task.Task[uint64](func(s *task.Scope, k task.Cont[uint64]) { k(s.Rand(), nil) }))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a, b, twin := draw(0), draw(1), draw(2)
	if a != twin || a == b {
		t.Fatalf("clients 0, 1, 2 drew %x %x %x: want 0 and 2 equal, 1 apart", a, b, twin)
	}
	// A twin restarted after a crash keeps its seed.
	if err := w.Crash(2, false); err != nil {
		t.Fatal(err)
	}
	if again := draw(2); again != a {
		t.Fatalf("the twin's new process drew %x, want %x", again, a)
	}
}

// Every scenario's clients get session ids out of creation order, as
// from an ensemble whose members create sessions (fakezk/sessionid.go):
// in most worlds the ids of the clients, connected 0 first, are not
// sorted, and a process restarted after a crash often gets an id below
// those of sessions opened before it. Code that orders candidates by
// session id meets both.
func TestSessionIDsOutOfOrder(t *testing.T) {
	unsorted, lower := 0, 0
	const worlds = 40
	for seed := uint64(1); seed <= worlds; seed++ {
		w, err := sim.New(sim.Config{Seed: seed, Clients: 4})
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]int64, 0, 5)
		for _, c := range w.Conns {
			ids = append(ids, c.SessionID())
		}
		if !slices.IsSorted(ids) {
			unsorted++
		}
		if err := w.Crash(0, false); err != nil {
			t.Fatal(err)
		}
		w.Drive()
		if id := w.Conns[0].SessionID(); id < slices.Max(ids) {
			lower++
		}
		w.Close()
	}
	if unsorted < worlds/2 || lower < worlds/4 {
		t.Errorf("of %d worlds, %d had client ids out of creation order and %d gave a restarted process an id below an older session's", worlds, unsorted, lower)
	}
}

// A regression seed recorded before twins existed replays without them
// (Regression.NoTwins), so it runs the history it failed with; the same
// seed outside the regressions draws its twins.
func TestRegressionWithoutTwins(t *testing.T) {
	sc := seqScenario(0)
	var seed uint64
	for s := uint64(1); seed == 0; s++ {
		if sim.RunSeed(sc, s, false).Plan.Twin != nil {
			seed = s
		}
	}
	sc.Regressions = []sim.Regression{{Seed: seed, NoTwins: true, Why: "test"}}
	if res := sim.RunSeed(sim.Explored(sc, seed), seed, false); res.Plan.Twin != nil {
		t.Errorf("regression seed %d replayed with twins %+v", seed, *res.Plan.Twin)
	}
	sc.Regressions = nil
	if res := sim.RunSeed(sim.Explored(sc, seed), seed, false); res.Plan.Twin == nil {
		t.Errorf("seed %d lost its twins outside the regressions", seed)
	}
}

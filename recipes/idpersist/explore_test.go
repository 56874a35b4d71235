package idpersist_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/idpersist"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// memStore is a Store in memory, shared by the replicas of one run (the
// file store's fsync would dominate thousands of simulated seeds).
// Unlike the file store, which keeps the greater of its mark and the
// value, it keeps whatever it is given, and a Store below its mark is
// reported to the trial as a violation: within a run the leaders' raises
// read the mark first and never store below it.
type memStore struct {
	v int64
	r *sim.Trial
}

func (m *memStore) Load() (int64, error) { return m.v, nil }
func (m *memStore) Store(v int64) error {
	if v < m.v {
		m.r.Errorf("durable mark goes down from %d to %d", m.v, v)
	}
	m.v = v
	return nil
}

// explore is the persistence scenario for fakezk/sim: three replicas
// (clients 0-2) run for leader, again after every expiry or deposition;
// two generators (clients 3-4) draw IDs in loops. Every fault class is
// allowed, total data loss (Wipe) included. Judged by: no ID handed out
// twice, the history of draws linearizable (so IDs after a wipe are above
// every ID before it), every ID at or below the durable mark when handed
// out, the limit node at or below the mark at the end, both generators
// drawing again once the faults stop, and a candidate deleted only by its
// own session, the server or an operator (sim's OwnDeletes; the deposer
// below, on client 3's executor (a generator), is an operator).
type explore struct {
	cfg     idpersist.Config
	store   *memStore
	ids     *sim.IDs
	stopped int
	// summed over seeds
	drawn  int64
	resets int // sequence resets applied (reset)
	// refused: replica runs and generator calls an ACL refused
	refused int

	startReplica func(i int) // builds and runs a replica on client i
	loop         func(i int) // generator i's loop
}

const replicas, generators = 3, 2

func newExplore() (sim.Scenario, *explore) {
	e := &explore{}
	return sim.Scenario{
		Name:    "idpersist",
		Clients: replicas + generators,
		Regressions: []sim.Regression{
			{Seed: 1769, ReconnectLag: true, Why: "liveness: a candidate create whose reply a cut lost, the session back through a member that had not applied it: createCandidate's listing missed it and a second candidate of the session was made (the listing now follows a sync)"},
			{Seed: 21, Why: "liveness, acl class: a leader deposed by a fenced write an ACL refused could not list the closed election directory to withdraw its candidate, gave up, and its candidate, its session alive, held every replica up (the withdrawal now goes on until allowed)"},
			{Seed: 9000022, Why: "liveness, acl class: as seed 21"},
			{Seed: 126, NoACL: true, Why: "a leader whose session expired while its deliveries were late stored its older mark over the new leader's (the mark went down from 210 to 208)"},
		},
		Faults: sim.Faults{Allow: sim.AllFaults | sim.Of(sim.Wipe) | sim.CounterFaults | sim.Of(sim.ACL)},
		// An operator closes any node for a while, or makes it read only:
		// the sequence, the limit, the election directory, candidates.
		ACL: []string{"/ids"},
		// The counter classes on the election directory: its counter run
		// out (every later candidate named ...2147483647), or deleted when
		// empty (the counter starts again at zero).
		Counters: []string{"/ids/election"},
		Duration: 10 * time.Second,
		Setup: func(r *sim.Trial) error {
			e.store, e.ids, e.stopped = &memStore{r: r}, sim.NewIDs(), 0
			e.cfg = idpersist.Config{Sequence: "/ids/seq", Limit: "/ids/limit", Election: "/ids/election",
				Store: e.store, Chunk: 10, LowWater: 3}
			return nil
		},
		Workload: e.workload,
		// A crashed replica's process is replaced by a new replica on the
		// same client (its candidate node lives until the dead session
		// expires); a crashed generator's call in progress may have
		// taken an ID (a gap).
		Restart: func(r *sim.Trial, i int) {
			if i < replicas {
				e.startReplica(i)
				return
			}
			e.ids.Unknown(i)
			e.loop(i)
		},
		// The replicas' candidates (not the sequence and limit nodes,
		// whose loss is the total loss Wipe already covers).
		Operator: []string{"/ids/election/"},
		// A candidate is deleted only by its own session (a withdrawal,
		// an exhausted number given back, its session's end), the server
		// or an operator: the scenario's deposer (depose), which runs on
		// the first generator's executor, is one.
		OwnDeletes:      []string{"/ids/election"},
		OperatorClients: []int{replicas},
		Live: func(r *sim.Trial) bool {
			return r.ProgressedSinceFaults(replicas) && r.ProgressedSinceFaults(replicas+1)
		},
		Quiesce: func(*sim.Trial) bool { return e.stopped == generators },
		Invariants: []sim.Invariant{
			sim.InvariantFunc(func(*sim.Trial) error { return e.ids.Linearizable() }),
			sim.InvariantFunc(e.limitBelowMark),
			// What background flows report to the executor
			// (Config.OnError): a session's end, the executor's close,
			// or an ACL's refusal of a withdrawal that goes on in the
			// background until allowed (Replica.Run).
			sim.NoClientErrors(task.ErrSessionExpired, task.ErrClosed, task.ErrNoAuth),
		},
	}, e
}

func (e *explore) workload(r *sim.Trial) {
	e.startReplica = replicaStarter(r, e.cfg, &e.refused)
	for i := range replicas {
		e.startReplica(i)
	}
	var loop func(i int)
	e.loop = func(i int) { loop(i) }
	loop = func(i int) {
		if r.Stopping() || r.Closing() {
			e.stopped++
			return
		}
		e.ids.Call(i)
		think := c.Sleep(time.Duration(r.Rand.Int64N(int64(100 * time.Millisecond))))
		executor.Submit(r.Execs[i], c.Seq(think, idpersist.Next(e.cfg)), func(id int64, err error) {
			switch {
			case err == nil:
				r.Check(e.ids.Return(i, id))
				if id > e.store.v {
					r.Errorf("client %d: id %d handed out above the durable mark %d", i, id, e.store.v)
				}
				r.Progress(i)
				e.drawn++
			case errors.Is(err, task.ErrSessionExpired):
				e.ids.Unknown(i)
			case errors.Is(err, task.ErrNoAuth):
				// Refused by an operator's ACL: judged as a call whose
				// outcome is not known (an ID may or may not be gone).
				e.refused++
				e.ids.Unknown(i)
			case r.Closing():
				return
			default:
				r.Errorf("client %d: %v", i, err)
			}
			loop(i)
		})
	}
	for i := replicas; i < replicas+generators; i++ {
		loop(i)
	}
	if r.Plan.On != 0 && r.Rand.IntN(2) == 0 {
		e.depose(r, replicas)
	}
	if r.Plan.On != 0 && r.Rand.IntN(2) == 0 {
		e.reset(r, replicas+1)
	}
}

// reset is an operator who, now and then while the faults are on,
// deletes the sequence node and creates it again holding 0, in one
// multi (no reader sees it missing): a new incarnation under the old
// limit, from which generators must take nothing until the leader has
// raised it above every ID handed out.
func (e *explore) reset(r *sim.Trial, i int) {
	if !r.FaultsOn() || r.Closing() {
		return
	}
	pause := c.Sleep(time.Duration(r.Rand.Int64N(int64(3 * time.Second))))
	redo := c.Map(task.Multi(&task.DeleteRequest{Path: e.cfg.Sequence, Version: task.AnyVersion},
		&task.CreateRequest{Path: e.cfg.Sequence, Data: seqid.Encode(0), Mode: task.Persistent, ACL: task.OpenACL}),
		func([]task.MultiResult) task.Unit { e.resets++; return task.Unit{} })
	executor.Submit(r.Execs[i], c.Seq(pause, redo), func(task.Unit, error) { e.reset(r, i) })
}

// depose is an operator who, now and then while the faults are on,
// deletes the lowest candidate node (the leader's, most of the time) from
// client i: the leader, its session alive, is deposed and must stop
// writing at once.
func (e *explore) depose(r *sim.Trial, i int) {
	if !r.FaultsOn() || r.Closing() {
		return
	}
	pause := c.Sleep(time.Duration(r.Rand.Int64N(int64(3 * time.Second))))
	del := c.Then(task.Children(e.cfg.Election), func(cl task.ChildList) task.Task[task.Unit] {
		if len(cl.Names) == 0 {
			return task.Done
		}
		low := slices.MinFunc(cl.Names, func(a, b string) int { return strings.Compare(a[len(a)-10:], b[len(b)-10:]) })
		return task.Delete(e.cfg.Election+"/"+low, task.AnyVersion)
	})
	executor.Submit(r.Execs[i], c.Seq(pause, del), func(task.Unit, error) { e.depose(r, i) })
}

// limitBelowMark: the limit node, as the server holds it (a client's read
// could come from a member that lags), is at or below the durable mark.
func (e *explore) limitBelowMark(r *sim.Trial) error {
	data, _, ok := r.NodeData(e.cfg.Limit)
	if !ok {
		return nil
	}
	l, err := seqid.Decode(data)
	if err != nil {
		return err
	}
	if l > e.store.v {
		return fmt.Errorf("limit %d above the durable mark %d", l, e.store.v)
	}
	return nil
}

// The scenario over seeds: every fault class it allows fires somewhere
// (Wipe included) and nothing fails.
func TestExplore(t *testing.T) {
	n := 60
	if testing.Short() {
		n = 15
	}
	sc, e := newExplore()
	st := sim.Check(t, sc, n)
	if st.Failures() > 0 {
		return
	}
	t.Logf("%d ids drawn, %d sequence resets, %d replica runs and calls an ACL refused", e.drawn, e.resets, e.refused)
	if e.resets == 0 {
		t.Errorf("no seed reset the sequence")
	}
	for _, cl := range sim.Classes() {
		if sc.Faults.Allow.Has(cl) && st.Fired[cl] == 0 {
			t.Errorf("fault class %s never fired", cl)
		}
	}
}

// Each known bug, switched back on, is caught by the scenario within
// 500 seeds, in each of 5 hunts over disjoint seed ranges.
func TestCanaries(t *testing.T) {
	for _, name := range idpersist.Canaries {
		t.Run(string(name), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			sc, _ := newExplore()
			sim.Catch(t, sc, string(name), 5, 500)
		})
	}
}

// Two runs of the same seed have the same history, byte for byte.
func TestSimDeterminism(t *testing.T) {
	sc, _ := newExplore()
	sim.Determinism(t, sc, sim.Sample(10, 1000))
	bsc, _ := newBlockingSim()
	sim.Determinism(t, bsc, sim.Sample(4, 1000))
}

// The large run of make sim: SIM_SEEDS seeds (skipped when unset).
func TestSimExplore(t *testing.T) {
	sc, _ := newExplore()
	bsc, _ := newBlockingSim()
	psc, _ := newParentSim()
	sim.Explore(t, sc, bsc, psc)
}

// A leader whose candidate node someone else deletes, its session alive,
// is deposed: its next fenced write fails and it steps down (the replica
// runs for election again) instead of retrying the write forever. The
// simulation found this: the deposition error also matched NoNode, which
// the leader's retry list holds, so a deposed leader spun at one instant.
func TestDeposedLeaderStepsDown(t *testing.T) {
	w := newWorld(t, 11, 2, fakezk.Config{Trace: true})
	defer func() {
		if t.Failed() {
			tr := w.Server.Trace()
			for _, l := range tr[max(0, len(tr)-30):] {
				t.Log(l)
			}
		}
	}()
	r := w.replica(0)
	w.settle(allOf(w.draw(1, 5), r.Leading))
	cands := w.Children(w.cfg.Election)
	if len(cands) != 1 {
		t.Fatalf("candidates %v", cands)
	}
	if _, err := sim.Run(w.World, 1, task.Delete(w.cfg.Election+"/"+cands[0], task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	// Drawing past the limit makes the leader write: deposed, it must
	// step down, run again and raise the limit as a new candidate.
	w.settle(w.draw(1, 40))
	if r.Turns() < 2 {
		t.Fatalf("leader turns %d: the deposed leader never stepped down", r.Turns())
	}
	if w.Stalled() {
		t.Fatal("the world ran without time passing")
	}
	if got := w.Children(w.cfg.Election); len(got) != 1 || got[0] == cands[0] {
		t.Fatalf("candidates after: %v (deleted %s)", got, cands[0])
	}
	w.checkMark()
}

// The seeds that once failed (Scenario.Regressions), on every run.
func TestSimRegressions(t *testing.T) {
	sc, _ := newExplore()
	sim.Regressions(t, sc)
	bsc, _ := newBlockingSim()
	sim.Regressions(t, bsc)
}

// replicaStarter returns what builds and runs a replica of cfg on client
// i: run again after an expiry or a deposition, and a little later after
// an operator's ACL refused it (counted in refused), unless the process
// crashed meanwhile (its restart did); any other end is a violation.
func replicaStarter(r *sim.Trial, cfg idpersist.Config, refused *int) func(i int) {
	return func(i int) {
		rep, err := idpersist.NewReplica(cfg)
		if err != nil {
			r.Errorf("%v", err)
			return
		}
		ex := r.Execs[i]
		var start func()
		start = func() {
			executor.Submit(ex, rep.Run(), func(_ task.Unit, err error) {
				switch {
				case r.Closing():
				case errors.Is(err, task.ErrSessionExpired), errors.Is(err, idpersist.ErrDeposed):
					start()
				case errors.Is(err, task.ErrNoAuth):
					*refused++
					inc := r.Incarnation(i)
					r.Clock.AfterFunc(time.Duration(r.Rand.Int64N(int64(300*time.Millisecond))), func() {
						if !r.Closing() && r.Incarnation(i) == inc {
							start()
						}
					})
				default:
					r.Errorf("replica %d: %v", i, err)
				}
			})
		}
		start()
	}
}

package sim_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// claimBugs switches on the two classic bugs of the claim-a-job recipe,
// for the tests that show the scenario catches them.
var claimBugs struct {
	foreignAfterLoss bool // NodeExists after a lost reply taken as someone else's
	deleteByPath     bool // a release retried by path, without reading first
	readWithoutSync  bool // a release's retry read without a sync first
}

// claimJob claims job with an ephemeral node (task.ExampleFlow's recipe):
// on NodeExists it reads the node, which may be its own after a lost reply.
func claimJob(job string, owner []byte) task.Task[bool] {
	return task.Flow(func(f *task.F) (bool, error) {
		for {
			_, err := task.Await(f, task.Create(job, owner, task.Ephemeral))
			switch {
			case err == nil:
				return true, nil
			case errors.Is(err, task.ErrNodeExists):
				if claimBugs.foreignAfterLoss {
					return false, nil
				}
				d, err := task.Await(f, task.Get(job))
				if err == nil {
					return d.Stat.EphemeralOwner == f.Scope().Session().ID, nil
				}
				if !errors.Is(err, task.ErrNoNode) && !lost(err) {
					return false, err
				} // gone since, or the read lost: create again
			case lost(err):
				continue
			default:
				return false, err
			}
		}
	})
}

// releaseJob deletes the job's node, ours. A delete whose reply was lost
// may have been applied, and someone may have claimed the job since: the
// retry reads the node and deletes it only if it is still ours. The read
// follows a sync: the session may be back through a member that has not
// applied the lost delete, where the node would still look ours.
func releaseJob(job string) task.Task[task.Unit] {
	return task.Flow(func(f *task.F) (task.Unit, error) {
		for retry := false; ; retry = true {
			if retry && !claimBugs.deleteByPath {
				if !claimBugs.readWithoutSync {
					if _, err := task.Await(f, task.Sync(job)); err != nil {
						if lost(err) {
							continue
						}
						return task.Unit{}, err
					}
				}
				d, err := task.Await(f, task.Get(job))
				if errors.Is(err, task.ErrNoNode) || err == nil && d.Stat.EphemeralOwner != f.Scope().Session().ID {
					return task.Unit{}, nil // gone, or someone else's now
				}
				if err != nil && !lost(err) {
					return task.Unit{}, err
				}
				if err != nil {
					continue
				}
			}
			_, err := task.Await(f, task.Delete(job, -1))
			if err == nil || errors.Is(err, task.ErrNoNode) {
				return task.Unit{}, nil
			}
			if !lost(err) {
				return task.Unit{}, err
			}
		}
	})
}

func lost(err error) bool {
	return errors.Is(err, task.ErrConnectionLoss) || errors.Is(err, task.ErrNotSent)
}

// claimScenario: clients written as flows claim one of two jobs, hold it
// a while and release it, in a loop, under every fault class but the
// operator's (who deletes a held node makes two owners legitimately), with
// creates' and deletes' replies often lost. Judged at each claim's end: a
// claim that says "mine" is backed by a node of the claimer's session; one
// that says "not mine" is not; no job is claimed while another live
// session (alive at the server) holds it and has not begun to release it.
// And from the server's journal (Scenario.OwnDeletes on the whole tree:
// the jobs are at its top): a job's node is deleted only by its own
// session (its release, its end), never by another client's, whose
// release's retry must leave a claim made since its lost delete.
type claimScenario struct {
	jobs  []string
	held  map[string]holding
	stats claimStats // summed over seeds
}

type holding struct {
	client int
	sess   int64
}

type claimStats struct {
	claims, deleteRetries, losses int
}

// newClaimScenario builds the scenario; lossRate is the probability that
// a create's or a delete's reply is lost.
func newClaimScenario(clients int, lossRate float64) (sim.Scenario, *claimScenario) {
	s := &claimScenario{jobs: []string{"/job-0", "/job-1"}}
	l := &lossy{rate: lossRate, stats: &s.stats}
	var loop func(r *sim.Trial, i int)
	loop = func(r *sim.Trial, i int) {
		if r.Stopping() || r.Closing() {
			return
		}
		executor.Submit(r.Execs[i], s.round(r, i), func(_ task.Unit, err error) {
			switch {
			case r.Closing():
				return
			case err == nil:
				r.Progress(i)
			case errors.Is(err, task.ErrSessionExpired):
			default:
				r.Errorf("client %d: %v", i, err)
			}
			loop(r, i)
		})
	}
	return sim.Scenario{
		Name:    fmt.Sprintf("claim/%d", clients),
		Clients: clients,
		Regressions: []sim.Regression{
			{Seed: 97720383031920, Root: sim.ExploreRoot, ReconnectLag: true, Why: "safety: a release's delete applied and its reply lost, the session back through a member that had not applied it: the retry's read found the node still ours and deleted another client's claim by path (the read now follows a sync)"},
		},
		Faults:     sim.Faults{Allow: sim.AllFaults &^ sim.Of(sim.Operator)},
		Duration:   5 * time.Second,
		Wrap:       l.wrap,
		OwnDeletes: []string{"/"},
		Setup: func(r *sim.Trial) error {
			s.held = map[string]holding{}
			l.w, l.rand = r.World, r.Rand
			return nil
		},
		Workload: func(r *sim.Trial) {
			for i := range clients {
				loop(r, i)
			}
		},
		Restart: loop,
	}, s
}

// round is one client's turn, as a flow: think, claim a job, and if it
// is ours hold it and release it.
func (s *claimScenario) round(r *sim.Trial, i int) task.Task[task.Unit] {
	return task.Flow(func(f *task.F) (task.Unit, error) {
		if _, err := task.Await(f, c.Sleep(time.Duration(r.Rand.Int64N(int64(50*time.Millisecond))))); err != nil {
			return task.Unit{}, err
		}
		job := s.jobs[r.Rand.IntN(len(s.jobs))]
		mine, err := task.Await(f, claimJob(job, fmt.Appendf(nil, "client %d", i)))
		if err != nil {
			return task.Unit{}, err
		}
		s.judge(r, i, job, mine, f.Scope().Session().ID)
		if !mine {
			return task.Unit{}, nil
		}
		_, err = task.Await(f, c.Sleep(time.Duration(r.Rand.Int64N(int64(200*time.Millisecond)))))
		if h := s.held[job]; h.client == i {
			delete(s.held, job) // releasing: it no longer acts as owner
		}
		if err != nil {
			return task.Unit{}, err
		}
		_, err = task.Await(f, releaseJob(job))
		return task.Unit{}, err
	})
}

// judge checks a claim's answer against the server at the moment it is
// given.
func (s *claimScenario) judge(r *sim.Trial, i int, job string, mine bool, sess int64) {
	st, ok := r.NodeStat(job)
	if !mine {
		if ok && st.EphemeralOwner == sess {
			r.Errorf("client %d: claim of %s says not mine, but the node is its session's %#x (a lost reply taken as someone else's)", i, job, sess)
		}
		return
	}
	s.stats.claims++
	if !slices.Contains(r.World.Server.Sessions(), sess) {
		// The session ended after the server answered (a process paused
		// past its timeout runs on where it stopped): not a live owner,
		// and its next request fails with the expiry.
		return
	}
	if !ok || st.EphemeralOwner != sess {
		r.Errorf("client %d: claim of %s says mine, but the node is %v (owner %#x), not its session's %#x", i, job, ok, st.EphemeralOwner, sess)
	}
	if h, held := s.held[job]; held && h.sess != sess && slices.Contains(r.World.Server.Sessions(), h.sess) {
		r.Errorf("client %d claimed %s while client %d holds it on session %#x, still alive", i, job, h.client, h.sess)
	}
	s.held[job] = holding{client: i, sess: sess}
}

// lossy drops a client's connection just after it sends a create or a
// delete, with probability rate (the request applied or not, drawn),
// and counts what the recipe then settles.
type lossy struct {
	rate  float64
	stats *claimStats
	w     *sim.World
	rand  *rand.Rand
}

func (l *lossy) wrap(i int, conn *fakezk.Conn) task.Conn { return &lossyConn{Conn: conn, l: l} }

type lossyConn struct {
	*fakezk.Conn
	l *lossy
}

func (lc *lossyConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	_, isCreate := req.(*task.CreateRequest)
	_, isDelete := req.(*task.DeleteRequest)
	lc.Conn.Do(req, func(resp task.Response) {
		if lost(resp.Err) {
			lc.l.stats.losses++
			if isDelete {
				lc.l.stats.deleteRetries++
			}
		}
		done(resp)
	}, watch)
	if (isCreate || isDelete) && lc.l.rand.Float64() < lc.l.rate {
		lc.l.w.Server.Drop(lc.Conn, lc.l.rand.IntN(2) == 0)
	}
}

// The claim scenario over seeds: faults bite (lost replies of creates
// and deletes), and no claim is wrong.
func TestClaimScenario(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 10
	}
	sc, s := newClaimScenario(3, 0.1)
	st := sim.Check(t, sc, n)
	if st.Failures() > 0 {
		return
	}
	t.Logf("%d seeds: %d claims, %d replies lost, %d deletes retried", n, s.stats.claims, s.stats.losses, s.stats.deleteRetries)
	if s.stats.claims == 0 || s.stats.losses == 0 || s.stats.deleteRetries == 0 {
		t.Fatal("the faults never bit: the scenario checks nothing")
	}
}

// Each classic bug of the recipe, put in, is caught within 100 seeds, in
// each of 2 hunts over disjoint seed ranges (with replies lost more often
// than in the scenario make sim runs, for a short hunt). The release by
// path is caught by the journal's judge (Scenario.OwnDeletes) as it
// deletes another client's claim: at rate 0.1, as make sim runs the
// scenario, in 60, 73, 64, 7 and 29 seeds from seed 52,300,000 on, every
// 20,000 (60, 73, 64, 17 and 116 by the claims' judge alone).
func TestClaimCatchesBugs(t *testing.T) {
	for _, bug := range []struct {
		name string
		on   *bool
	}{
		{"NodeExists after a lost reply taken as someone else's", &claimBugs.foreignAfterLoss},
		{"a release retried by path", &claimBugs.deleteByPath},
	} {
		t.Run(bug.name, func(t *testing.T) {
			*bug.on = true
			defer func() { *bug.on = false }()
			sc, _ := newClaimScenario(3, 0.4)
			sim.Catch(t, sc, bug.name, 2, 100)
		})
	}
}

// A release whose retry reads without a sync first, put in, is caught
// within 10,000 seeds in each of 2 hunts. It needs a delete applied whose
// reply a cut lost, and the session back through a member that has not
// applied it (a lag seed's draw). The retry's delete takes the claim
// another client made since, which the journal's judge
// (Scenario.OwnDeletes) sees at once, where the claims' judge waits for
// a later claim to meet it: hunts need 670 and 218 seeds (Catch's
// ranges; 1,015 and 218 before the judge, 1,659 in a third), and 388,
// 1,331, 244 and 442 from seed 52,300,000 on, every 20,000 (3,288,
// 1,331, 703 and 705 without the judge). A canary (make sim runs it,
// without the race detector).
func TestCanaryClaimReadWithoutSync(t *testing.T) {
	claimBugs.readWithoutSync = true
	defer func() { claimBugs.readWithoutSync = false }()
	sc, _ := newClaimScenario(3, 0.4)
	sim.Catch(t, sc, "a release's retry read without a sync", 2, 10000)
}

// The executor's sync after a reconnect (executor.Config, on by default)
// makes the same flow safe without its own sync: in the seed ranges where
// TestCanaryClaimReadWithoutSync's hunts catch the release's plain read
// (the executors without it, as the simulation runs them), the seeds
// that fail there pass with it, and so do all the others. A canary (make
// sim runs it).
func TestCanaryClaimReadWithoutSyncExecutorSyncs(t *testing.T) {
	if raceOn {
		// 6,000 seeds under the race detector grow past 8 GB; make test
		// runs the canaries without it (Makefile's UNIT_SKIP), and the
		// scenario's code runs under it in TestClaim*.
		t.Skip("a canary hunt of 6,000 seeds: run without -race")
	}
	claimBugs.readWithoutSync = true
	defer func() { claimBugs.readWithoutSync = false }()
	sc, _ := newClaimScenario(3, 0.4)
	synced := sc
	synced.SyncAfterReconnect = true
	const span = 3000
	for _, from := range []uint64{1, 1_000_001} {
		caught := uint64(0)
		for seed := from; seed < from+span && caught == 0; seed++ {
			if sim.RunSeed(sc, seed, false).Err != nil {
				caught = seed
			}
		}
		if caught == 0 {
			t.Fatalf("seeds %d..%d: the plain read is not caught without the executor's sync: the test shows nothing", from, from+span-1)
		}
		for seed := from; seed < from+span; seed++ {
			if res := sim.RunSeed(synced, seed, false); res.Err != nil {
				t.Fatalf("seed %d (the first caught without the sync: %d) fails with the executor's sync: %v", seed, caught, res.Err)
			}
		}
		t.Logf("seeds %d..%d: caught at %d without the executor's sync; none fails with it", from, from+span-1, caught)
	}
}

package election_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// The election on the shared scenario machinery (fakezk/sim): fault plans
// drawn per seed from every class (drops applied and not, short and long
// partitions, delays, server restarts, clock jumps; outright expiries in
// the fenced-only variant), a workload under faults for 20s of simulated
// time, liveness once they stop, then quiescence and invariants.
//
// Each of 4 clients (plus a twin of client 0 with the same executor seed)
// loops: campaign, two fenced log writes (sim.FencedEntry) with simulated
// time between, resign. On one seed in four a second loop campaigns with
// client 1's candidate on its executor, so on its session (sibling
// campaigns, as two goroutines on one Client), and that
// client loses the reply of a Master campaign's multi now and then as
// every client does an election candidate's create. Judged by:
//
//   - sim.Leaders: at most one campaign acting at any simulated instant
//     (the sibling judged as a client of its own, Leaders.Siblings),
//     acting from the grant (OnState Leading) to the end (OnState Ended),
//     and a leader that leads again after a reconnect does so while no
//     leader granted after it acts (Leaders.Resume: no operator excuse,
//     its read after the reconnect must see its node gone);
//     not judged when outright expiries are on (the server ending a
//     connected client's session is something no client can foresee; the
//     fence still holds);
//   - sim.Fencing: the fenced log's tokens never go down and strictly
//     increase from one leader to the next (no token enters twice), no
//     late write;
//   - no leadership lost but by its session's end, the give-up rule or
//     the operator (lostToNoOne): no campaign deletes or changes a
//     leader's node, its sibling's included;
//   - one wake-up per deletion (the election's waiters watch only their
//     predecessor);
//   - no candidate node left after the loops end; no failed cleanup;
//   - sim's OwnDeletes: a candidate node (an Election's) or the master
//     node (a Master's) is deleted only by its own session (Resign, a
//     cleanup, the delete after giving up or losing it, its end), the
//     server or the operator, never by another client's session (a
//     resign retried after a lost reply, or sent late, never takes the
//     next leader's node); a Master's leases are not judged, since a
//     campaign's multi deletes every lease it listed;
//   - the twin also runs the candidate's Observe (on one seed in two
//     through the blocking face, Client.Observe, in an actor whose
//     calls' contexts end at drawn points): every observation is
//     who led at one zxid of the server's history (the master node, or
//     the election's lowest candidate node), never at one before the
//     previous observation's, and once nobody leads the observer says so
//     (leaderWatch, observe_sim_test.go).
//
// A client process that crashes starts its loop again with the same
// candidate (the same identity and data); the operator deletes and
// re-creates candidate nodes and the master node; a process paused while
// leading is judged by the fence after it resumes (sim.Leaders counts it
// no longer).
type exploreSim struct {
	master, expire bool
	refused        int // campaigns an ACL refused, observers it ended

	log     *wakeLog
	logOf   *fakezk.Server // the world log belongs to
	leaders *sim.Leaders
	cands   []election.Candidate
	sibOn   bool                         // the sibling loop runs this seed
	keyOf   map[*election.Leadership]int // client siblingOf's leaderships: siblingOf or sibling, for sim.Leaders
	started map[int]time.Time            // when loop i's campaign began
	running int
	watch   leaderWatch // the twin's observer and its judge
	// noObserver keeps the observer off on every seed, for a seed held
	// by a test from a history without it.
	noObserver bool
}

const (
	exploreLog     = "/fence"
	exploreClients = 4
	exploreTimeout = 4 * time.Second // the scenario's session timeout

	// A second campaign loop runs on client siblingOf's executor with
	// its candidate, so on its session, beside that client's own: of two
	// leaderships of that client at once, sim.Leaders judges the second
	// under the key sibling, as a client of its own whose process is
	// siblingOf's.
	sibling, siblingOf = 100 + 1, 1
)

// observedRegressions are the regression seeds recorded with the
// observer on (the observer runs on every seed but the regression seeds
// kept before it existed): they replay with it, as they failed.
var observedRegressions = map[uint64]bool{72869795294715: true, 58301922: true}

func newExploreSim(master, expire bool) (*exploreSim, sim.Scenario) {
	s := &exploreSim{master: master, expire: expire}
	const clients = exploreClients
	faults := sim.AllFaults
	var counters []string
	if !master { // a Master's nodes have fixed names
		faults |= sim.CounterFaults
		counters = []string{"/svc/election"}
	}
	if !expire {
		faults &^= sim.Of(sim.Expire)
	}
	// An operator closes the candidates' directory, a candidate, the
	// master node or a lease for a while, or makes it read only.
	faults |= sim.Of(sim.ACL)
	aclOn := []string{"/svc/election"}
	if master {
		aclOn = []string{"/svc/master"} // and /svc/master.leases: the prefix
	}
	// The candidates' nodes, which only their own session deletes: an
	// Election's candidate nodes, a Master's node (not its leases: a
	// campaign's multi deletes every lease listed, a deposed master's
	// included, as PROTOCOL.md's Master protocol says).
	own := []string{"/svc/election"}
	if master {
		own = []string{"/svc/master"}
	}
	name := "election"
	if master {
		name = "master"
	}
	if expire {
		name += "-expire"
	}
	var regressions []sim.Regression
	switch {
	case master && !expire:
		regressions = []sim.Regression{
			{Seed: 6481852880270, Why: "two acting masters (found by make test on a drawn seed): an operator deleted the master's lease, so its resign's multi failed and two flows of its session each read the node and deleted it at the version read; the first deleted it, another campaign made it again at version 0, and the second's delete, sent late, removed the new master's node (the delete is now behind a check of the leases directory's version, which every campaign moves)"},
			{Seed: 9001068, Root: sim.ExploreRoot, Why: "liveness, acl class: a campaign whose multi made the master node failed (its lease replaced by an operator, the lease directory closed); its cleanup deleted the lease alone and left the node, of a live session, and every campaign waited for it (the cleanup now deletes a node of its session no lease vouches for, and goes on until allowed)"},
			{Seed: 1716, NoACL: true, NoTwins: true, Why: "a resigning master's delete of /svc/master, applied with its reply lost, retried after a short partition deleted the next master's node: two acting masters"},
			{Seed: 176839657743356, NoACL: true, NoLagWatched: true, Why: "as 1716 (a retried delete of /svc/master removed the next master's node), and the deposed master's grant, from an ownership read answered just before a 2.1s suspension, ran only after the reconnect: it led on a stale read"},
			{Seed: 197987323664822, NoACL: true, Why: "a resign's multi (check lease v=0, delete /svc/master, delete lease) lost unapplied and retried after the reconnect deleted the next master's node: the next master was the twin of the resigner (same executor seed), whose new lease had the same name at version 0; lease names now start with the session's id"},
			{Seed: 3951682797154, NoACL: true, Why: "a campaign listed the leases (none); another campaign then led, and an operator removed its master node (a second stale delete of /svc/master removed the operator's copy); the first campaign's multi created the master node and left the other's lease, created after its listing: the deposed master's fenced write passed beside the new master's (its member lagged, so it read its node as still there). The multi now checks and moves the lease directory's version (since the histories moved the seed no longer reaches that schedule: it passes with the canary election/master-unversioned-multi on; 58301922 reaches the canary)"},
			{Seed: 58301922, ReconnectLag: true, Blinks: true, SyncAfterReconnect: true, Canary: "election/master-unversioned-multi", Why: "acl class: a master whose lease an operator closed gave its node back behind a check of the lease directory's version (deleteMasterNode); a second cleanup flow's copy of that multi was lost with a cut and retried after the reconnect 2.6 s later, when another campaign's multi had made the master node again (at version 0) without moving the directory's version: the retry passed its check and deleted the new master's node (the judge of own deletes). Every campaign's multi now moves the directory's version (canary election/master-unversioned-multi); recorded with the observer on (observedRegressions)"},
		}
	case !master && !expire:
		regressions = []sim.Regression{
			{Seed: 4505, NoACL: true, NoTwins: true, NoLagWatched: true, Why: "client 2 acts as leader at 14.37s while client 0 has acted since 9.19s (partitions, delays, clock jumps)"},
			{Seed: 1000000420, NoACL: true, Root: sim.ExploreRoot, Why: "the judge: after the directory's counter restarted, a process with client 0's executor seed (its twin, or itself after a crash) drew a prefix again and got the same number, and the wakes of two incarnations of one path were counted as one deletion's herd (wakes are now counted per czxid; since prefixes are mixed with the session's id that name no longer recurs, so the seed no longer reaches this history)"},
			{Seed: 54, NoACL: true, Why: "liveness: the directory's counter set near its maximum; a candidate with an exhausted number waited for the directory to empty, but the others had already deleted and made it again and kept campaigning in it: it never emptied again"},
			{Seed: 1000000240, NoACL: true, Root: sim.ExploreRoot, Why: "as 54 (a candidate waiting for a directory made afresh, and kept busy, to empty)"},
			{Seed: 72869795294715, ReconnectLag: true, Blinks: true, Canary: "election/recheck-unsynced", Why: "a leader cut off for a moment (a short partition), its node deleted by an operator inside the cut and another candidate granted, came back through a member that had not applied the delete: its recheck, a plain read, found the node and it led again beside the other (the recheck now reads after a sync); recorded with the observer on (observedRegressions)"},
		}
	}
	return s, sim.Scenario{
		Name:        name,
		Regressions: regressions,
		Clients:     clients,
		Faults:      sim.Faults{Allow: faults},
		ACL:         aclOn,
		Duration:    20 * time.Second,
		Server:      fakezk.Config{Journal: s.watch.journal},
		Wrap: func(i int, conn *fakezk.Conn) task.Conn {
			if i == 0 && (s.log == nil || s.logOf != conn.Server()) { // not again for a restarted process
				s.log, s.logOf = newWakeLog(clients+1), conn.Server()
			}
			return &watcher{Conn: conn, client: i, log: s.log}
		},
		Setup: func(r *sim.Trial) error {
			if err := addTwin(r.World, s.log, 0); err != nil {
				return err
			}
			s.log.dropCreates(r.Server, rand.New(rand.NewPCG(r.Seed, 3)), 0.1)
			s.leaders = sim.NewLeaders(r.World)
			// A leader paused (clock jumps) past its margin may act on
			// while the next is granted (the package doc, Safety): not
			// judged here, fencing judges its writes. The margin: the
			// give-up timer leaves (1 - GiveUp) of the timeout, less the
			// longest delivery delay, which also holds the Suspended.
			s.leaders.Margin = time.Duration((1-election.DefaultGiveUp)*float64(exploreTimeout)) - time.Second
			s.cands = nil
			for i := range r.Execs {
				cfg := []election.Option{election.WithData([]byte(strconv.Itoa(i))), election.WithOnState(s.onState(r, i))}
				var cand election.Candidate
				var err error
				if master {
					cand, err = election.NewMaster("/svc/master", cfg...)
				} else {
					cand, err = election.New("/svc/election", cfg...)
				}
				if err != nil {
					return err
				}
				s.cands = append(s.cands, cand)
			}
			// The sibling campaigns on one seed in four (drawn from the
			// seed), so the scenario's cost per seed stays about the same.
			s.sibOn = rand.New(rand.NewPCG(r.Seed, 5)).IntN(4) == 0
			if s.sibOn {
				// The sibling's client loses its Master campaigns'
				// replies as every client loses its candidates' creates:
				// a campaign that meets its sibling's master node with
				// its reply lost.
				s.log.multisOf = map[int]bool{siblingOf: true}
			}
			s.leaders.Siblings = map[int]int{sibling: siblingOf}
			s.started, s.keyOf = map[int]time.Time{}, map[*election.Leadership]int{}
			if master {
				s.watch.reset(r.World, "/svc/master", false)
			} else {
				s.watch.reset(r.World, "/svc/election", true)
			}
			_, err := sim.Run(r.World, 0, task.Create(exploreLog, nil, task.Persistent))
			return err
		},
		Workload: func(r *sim.Trial) {
			s.running = len(r.Execs)
			for i := range r.Execs {
				s.loop(r, i)
			}
			if s.sibOn {
				s.running++
				s.loop(r, sibling)
			}
			// Not on a regression seed: the observer's reads on the twin's
			// session would change the history the seed was kept for.
			// The task face on one seed in two, the blocking face
			// (Client.Observe) on the other (drawn from a stream of its
			// own, which leaves the rest of the seed's draws as they were).
			if !s.noObserver && (observedRegressions[r.Seed] || !slices.ContainsFunc(regressions, func(g sim.Regression) bool { return g.Seed == r.Seed })) {
				if rand.New(rand.NewPCG(r.Seed, 11)).IntN(2) == 0 {
					s.watch.start(r, s.cands[observeClient])
				} else if c, err := s.observerClient(r); err != nil {
					r.Errorf("client %d: %v", observeClient, err)
				} else {
					s.watch.startBlocking(r, c)
				}
			}
		},
		Restart: func(r *sim.Trial, i int) {
			s.leaders.End(i) // the dead process acts no more; the new one has not begun
			s.loop(r, i)

			if i == siblingOf && s.sibOn {
				s.leaders.End(sibling)
				clear(s.keyOf)
				s.loop(r, sibling)
			}
		},
		Operator:       []string{"/svc/election/", "/svc/master"},
		OperatorSpare:  []string{"/svc/master" + election.LeasesSuffix}, // PROTOCOL.md, Master protocol: never deleted
		OperatorWrites: true,
		OwnDeletes:     own,
		Counters:       counters,
		Live: func(r *sim.Trial) bool {
			for i := range clients {
				if !r.ProgressedSinceFaults(i) {
					return false
				}
			}
			return true
		},
		Quiesce: func(r *sim.Trial) bool {
			return s.running == 0 && len(r.Children("/svc/election")) == 0 && len(withoutLeases(r.Children("/svc"))) <= 1 &&
				(!s.watch.on || s.watch.settled())
		},
		Invariants: []sim.Invariant{
			sim.Fencing(exploreLog),
			sim.InvariantFunc(s.oneWakeUp),
			sim.InvariantFunc(func(r *sim.Trial) error {
				if ch := withoutLeases(r.Children("/svc")); s.master && len(ch) != 0 {
					return fmt.Errorf("master node left: %v", ch)
				}
				return nil
			}),
			// A cleanup an operator's ACL refused is reported, and goes on
			// in the background: Quiesce sees that it ends.
			sim.NoClientErrors(task.ErrSessionExpired, task.ErrClosed, task.ErrNoAuth),
		},
	}
}

// observerClient is the blocking face the twin observes with.
func (s *exploreSim) observerClient(r *sim.Trial) (*election.Client, error) {
	if s.master {
		return election.NewMasterClient(r.Execs[observeClient], "/svc/master")
	}
	return election.NewClient(r.Execs[observeClient], "/svc/election")
}

func (s *exploreSim) onState(r *sim.Trial, client int) func(*election.Leadership, election.State) {
	return func(l *election.Leadership, st election.State) {
		i := client
		if client == siblingOf && s.sibOn {
			i = s.key(l)
			if st == election.Ended {
				delete(s.keyOf, l)
			}
		}
		switch {
		case s.expire:
		case st == election.Leading && contains(s.leaders.Acting(), i):
			r.Check(s.leaders.Resume(i)) // after a reconnect: on a read made since
		case st == election.Leading:
			excused := s.leaders.Excused
			r.Check(s.leaders.BeginNode(i, l.Path(), l.Token()))
			if s.leaders.Excused > excused {
				r.Logf("client %d leads while a leader paused past its margin (clock jumps) or deposed by an operator still acts: judged by fencing", i)
			}
		case st == election.Ended:
			s.leaders.End(i)
			s.lostToNoOne(r, i, l)
		}
	}
}

// key names a leadership of client siblingOf for sim.Leaders: siblingOf
// unless another of its leaderships has that key, then sibling.
func (s *exploreSim) key(l *election.Leadership) int {
	if k, ok := s.keyOf[l]; ok {
		return k
	}
	k := siblingOf
	for _, taken := range s.keyOf {
		if taken == siblingOf {
			k = sibling
		}
	}
	s.keyOf[l] = k
	return k
}

// lostToNoOne fails a leadership lost while its session lives, not
// given up, and no node of the role touched by the operator since its
// campaign began (the candidate node; a master node or any lease): no client may
// delete or change a leader's node (a sibling campaign on the same
// session included: the package's PROTOCOL.md, Master step 2, "Anyone
// else's (another campaign's, even on our session): wait").
func (s *exploreSim) lostToNoOne(r *sim.Trial, i int, l *election.Leadership) {
	err := l.Err()
	if !errors.Is(err, election.ErrLost) || errors.Is(err, election.ErrGaveUp) ||
		errors.Is(err, task.ErrSessionExpired) || errors.Is(err, task.ErrClosed) {
		return
	}
	from := s.started[i]
	if i == siblingOf || i == sibling { // either loop's leadership, whatever its key
		if b := s.started[sibling]; b.Before(s.started[siblingOf]) {
			from = b
		} else {
			from = s.started[siblingOf]
		}
	}
	if !slices.Contains(r.Server.Sessions(), l.Session().ID) || r.OperatedUnder(l.Path(), from, r.Clock.Now()) {
		return
	}
	r.Errorf("client %d (key %d): leadership %s (token %d) lost while its session lives, its node untouched by the operator: %v", i%100, i, l.Path(), l.Token(), err)
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// loop is client i's rounds until the run is stopping (i is sibling:
// a second loop of client siblingOf, with its candidate).
func (s *exploreSim) loop(r *sim.Trial, i int) {
	if r.Stopping() || r.Closing() {
		s.running--
		return
	}
	ex, cand := r.Execs[i%100], s.cands[i%100] // the sibling: client siblingOf's, the same candidate
	hold := time.Duration(200+r.Rand.IntN(2000)) * time.Millisecond
	s.started[i] = r.Clock.Now()
	executor.Submit(ex, cand.Campaign(), func(l *election.Leadership, err error) {
		if r.Closing() {
			return
		}
		if err != nil {
			if errors.Is(err, task.ErrNoAuth) {
				// Refused by an operator's ACL: campaign again a little
				// later (unless the process crashed meanwhile: its
				// restart did).
				s.refused++
				r.Clock.AfterFunc(time.Duration(r.Rand.Int64N(int64(300*time.Millisecond))), func() {
					if !r.Closing() && r.Execs[i%100] == ex {
						s.loop(r, i)
					}
				})
				return
			}
			if !errors.Is(err, task.ErrSessionExpired) && !errors.Is(err, election.ErrLost) {
				r.Errorf("client %d: campaign: %v", i, err)
			}
			s.loop(r, i)
			return
		}
		entry := func(kind string) task.MultiOp { return sim.FencedEntry(exploreLog, l.Token(), kind) }
		section := c.Seq(l.Fenced(entry("enter")), c.Seq(c.Sleep(hold), l.Fenced(entry("exit"))))
		executor.Submit(ex, section, func(_ []task.MultiResult, err error) {
			if r.Closing() {
				return
			}
			late := task.Value[[]task.MultiResult](nil)
			// (A section cut by the session's expiry may end just before
			// the leadership hears of it, in the same executor step.)
			if l.Err() != nil || errors.Is(err, task.ErrSessionExpired) {
				// A leader that lost and writes regardless: refused.
				late = c.Catch(l.Fenced(entry("late")), func(error) task.Task[[]task.MultiResult] {
					return task.Value[[]task.MultiResult](nil)
				})
			} else if err != nil && !task.IsRetryable(err) && !errors.Is(err, task.ErrNoAuth) {
				r.Errorf("client %d: section: %v", i, err)
			}
			executor.Submit(ex, c.Seq(late, l.Resign()), func(_ task.Unit, err error) {
				if r.Closing() {
					return
				}
				if err != nil && !errors.Is(err, task.ErrNoAuth) { // a refused resign goes on in the background
					r.Errorf("client %d: resign: %v", i, err)
				}
				if i < exploreClients { // the twin is not one of the scenario's clients
					r.Progress(i)
				}
				s.loop(r, i)
			})
		})
	})
}

func (s *exploreSim) oneWakeUp(r *sim.Trial) error {
	if s.master {
		return nil // the /master pattern wakes every waiter by design
	}
	if r.Plan.On.Has(sim.Operator) || r.Plan.On.Has(sim.ACL) {
		// A waiter whose own candidate the operator deleted keeps its
		// watch on its predecessor until that wakes it (then it finds
		// its node gone): a second wake-up that is no herd. So does a
		// campaign an ACL refused, ended while its watch was set.
		return nil
	}
	for path, woken := range s.log.woken {
		if len(woken) > 1 {
			return fmt.Errorf("deleting %s woke %d waiters %v", path, len(woken), woken)
		}
	}
	return nil
}

func exploreSeeds() int {
	if testing.Short() {
		return 30
	}
	return 200
}

func TestExploreElection(t *testing.T) {
	s, sc := newExploreSim(false, false)
	if st := sim.Check(t, sc, exploreSeeds()); st.Failures() > 0 {
		return
	}
	t.Logf("%d observations of the lowest candidate judged, %d of them from the blocking face", s.watch.seen, s.watch.seenBlocking)
	if s.watch.seenBlocking == 0 || s.watch.seen == s.watch.seenBlocking {
		t.Error("an observer's face delivered nothing: the scenario judges nothing of it")
	}
}

func TestExploreMaster(t *testing.T) {
	s, sc := newExploreSim(true, false)
	if st := sim.Check(t, sc, exploreSeeds()); st.Failures() > 0 {
		return
	}
	t.Logf("%d observations of the master node judged, %d of them from the blocking face", s.watch.seen, s.watch.seenBlocking)
	if s.watch.seenBlocking == 0 || s.watch.seen == s.watch.seenBlocking {
		t.Error("an observer's face delivered nothing: the scenario judges nothing of it")
	}
}

func TestExploreWithExpiries(t *testing.T) {
	_, sc := newExploreSim(false, true)
	sim.Check(t, sc, exploreSeeds()/2)
	_, sc = newExploreSim(true, true)
	sim.Check(t, sc, exploreSeeds()/2)
}

// The canaries on the shared machinery: sim.Catch hunts three times over
// disjoint seed ranges and logs the seeds each hunt needed. A TestCanar*
// test: make sim runs it, without the race detector (the unit step skips
// it).
func TestCanariesExplore(t *testing.T) {
	for _, tc := range []struct {
		bug    canary.Name
		master bool
	}{
		{bugNames.skipOwner, false},
		{bugNames.skipOwner, true},
		{bugNames.noGiveUp, false},
		{bugNames.watchLowest, false},
		// Two campaigns on one session: the sibling loop on client 1.
		{bugNames.replaceSibling, true},
		{bugNames.siblingShares, true},
		// A suspension right after a reconnect, before the recheck: the
		// blink class (fakezk/sim/blink.go), long enough to expire the
		// session.
		{bugNames.armOnChange, false},
		{bugNames.armOnChange, true},
		// A Master's give-back that deletes the master node at any
		// version: the journal's judge of own deletes (OwnDeletes on
		// the master node) sees the next campaign's node go.
		{bugNames.resignDeletesAny, true},
	} {
		name := string(tc.bug)
		if tc.master {
			name += "/master"
		}
		t.Run(name, func(t *testing.T) {
			restore := canary.Enable(tc.bug)
			defer restore()
			_, sc := newExploreSim(tc.master, false)
			sim.Catch(t, sc, name, 3, 2000)
		})
	}
	// A recheck answered, then a blink, an operator's delete of the
	// leader's node inside it (the operator-in-cut class) and another
	// candidate granted before the reconnect: rarer, one hunt (2,294 and
	// 2,822 seeds in two hunts when the class was added;
	// TestRecheckReadBeforeASecondSuspension is the directed test).
	t.Run(string(bugNames.recheckAnyRead), func(t *testing.T) {
		restore := canary.Enable(bugNames.recheckAnyRead)
		defer restore()
		_, sc := newExploreSim(false, false)
		sim.Catch(t, sc, string(bugNames.recheckAnyRead), 1, 6000)
	})
}

var bugNames = struct {
	skipOwner, noGiveUp, watchLowest, replaceSibling, siblingShares, armOnChange, recheckAnyRead, resignDeletesAny canary.Name
}{
	"election/skip-owner-check", "election/no-give-up", "election/watch-lowest", "election/master-replace-sibling",
	"election/master-sibling-shares-node", "election/arm-on-change", "election/recheck-any-read",
	"election/master-resign-deletes-any",
}

// One seed, one history: each sampled seed run twice gives the same trace.
func TestExploreDeterminism(t *testing.T) {
	_, sc := newExploreSim(false, false)
	sim.Determinism(t, sc, []uint64{1, 2, 3})
	_, sc = newExploreSim(true, true)
	sim.Determinism(t, sc, []uint64{4, 5})
}

// The large run of make sim: SIM_SEEDS seeds of the election and the
// master scenarios, with and without outright expiries (skipped when
// unset).
func TestSimExplore(t *testing.T) {
	_, esc := newExploreSim(false, false)
	_, msc := newExploreSim(true, false)
	sim.Explore(t, esc, msc)
}

// The seeds that once failed (Scenario.Regressions), on every run.
func TestSimRegressions(t *testing.T) {
	_, esc := newExploreSim(false, false)
	_, msc := newExploreSim(true, false)
	sim.Regressions(t, esc, msc)
}

// A sample of seeds runs twice with the same history (make sim counts the
// pairs).
func TestSimDeterminism(t *testing.T) {
	for _, master := range []bool{false, true} {
		_, sc := newExploreSim(master, true)
		sim.Determinism(t, sc, sim.Sample(5, 500))
	}
}

// A candidate's sync before its listing and its read of its own node,
// switched off, lets a member that lags show the candidate its own
// deleted node as the lowest, and it leads beside the leader
// (TestNoGrantOnStaleQueueRead's schedule). Seed 722 of the election
// scenario found it (the fence log's holders interleaved) while the sync,
// the listing and the read waited for each other's replies; sent
// together, they leave the lag a narrower window, and 40,000 seeds of
// the scenario did not reach it again.
func TestCanaryGrantWithoutSync(t *testing.T) {
	restore := canary.Enable("election/grant-without-sync")
	defer restore()
	stale, leader := staleGrant(t)
	if stale == nil {
		t.Fatal("the candidate was not granted leadership on its stale read without the sync: the test no longer reaches the stale grant")
	}
	t.Logf("without the sync, client 0 leads (token %d) beside client 1 (token %d)", stale.Token(), leader.Token())
}

// A leader cut off for a moment, its node deleted by an operator meanwhile
// and another candidate granted, comes back through a member that has not
// applied the delete: its recheck reads after a sync and loses, rather
// than lead again beside the other. The election scenario's drawn seed
// 72869795294715 (make test on 424616a), replayed as Explore drew it (no
// root, no executor sync: sim.RunSeed); with the recheck's plain read
// (canary election/recheck-unsynced) it fails.
func TestRecheckOnLaggingMemberAfterOperatorDelete(t *testing.T) {
	const seed = 72869795294715
	_, sc := newExploreSim(false, false)
	if sim.RootedSeed(seed) || sim.SyncedSeed(seed) {
		t.Fatal("the seed no longer replays as Explore drew it")
	}
	if res := sim.RunSeed(sc, seed, false); res.Err != nil {
		t.Fatalf("seed %d: %v", seed, res.Err)
	}
	restore := canary.Enable("election/recheck-unsynced")
	defer restore()
	if res := sim.RunSeed(sc, seed, false); res.Err == nil {
		t.Fatalf("seed %d passes with the recheck unsynced: it no longer shows the bug", seed)
	}
}

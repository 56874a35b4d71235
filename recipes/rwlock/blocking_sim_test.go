package rwlock

// The blocking face under the simulation. These tests are in the package
// itself (not rwlock_test) so that their TestSimExplore and
// TestSimDeterminism run beside those of sim_test.go under the names
// make sim selects.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/task"
)

const (
	bsimDir = "/rw/b"
	bsimLog = "/rwlog"
)

// Where a round's context ends.
const (
	endNone    = iota // it does not
	endBefore         // before Acquire is called
	endDuring         // while Acquire waits (a step or an instant drawn)
	endAfter          // just after Acquire returns the lock
	endInside         // inside the critical section
	endRelease        // while Release runs
	numEnds
)

var endNames = [numEnds]string{"none", "before", "during", "after", "inside", "release"}

// blockingSim drives the readers-writer lock through its Client from
// actors: each of 3 clients has one Client shared by 2 goroutines (two
// readers of one Client may hold at once; a writer and anything else on
// one Client may not: ErrAlreadyHeld), each looping: draw a mode (a
// writer one time in three) and where its context will end (nowhere,
// before the acquire, during it, just after, inside the critical
// section, during Release), acquire (or, one round in three, try:
// TryAcquire or TryAcquireRead, whose ErrBusy ends the round), write "enter" and "exit" fenced
// entries (kinds wenter/wexit, renter/rexit) with a sleep between, and
// Release with the same context, deferred as the doc's pattern has it.
// A Release an ACL refused (task.ErrNoAuth) has its actor, one time in
// two, try again at once: TryAcquire (a writer's try, which a released
// node of either mode is in the way of) with a live context, every few
// tens of milliseconds while the ACL refuses that too (an eager round).
// In seeds whose plan has the acl class, the scenario aims that class
// at a Release once (aimRelease): the directory closed just before the
// delete, for up to a session timeout, when the released node is the
// directory's highest contender; its actor's next rounds are eager. In
// seeds whose plan has the restart class, it aims a server restart once
// at the first delete of a contender node that is not a Release's with
// a live context (aimRestart): a Release's whose context had ended, an
// attempt's withdrawn as its context ended, a try's behind another.
//
// Judged by: the fencing log (judgeModes: a writer's entries overlap no
// other holder's in the server's order, no write after a loss applied);
// every ErrBusy of a try: the node ahead is never one of a hold its
// Client gave back before the try began (the Client waits for its own
// deletes in the background, also those an ACL refused), and the try's
// own node is gone; a Release that returns nil has deleted its node;
// each call's error, by the doc of its verb (sim.Call.Judge with
// acquireRules, releaseRules, fencedRules: never a connection loss from an acquire or a Release, which
// retry past it, nor a session expiry from a Release, ErrAlreadyHeld
// only while the Client holds the lock in a mode the call conflicts
// with, a context's error only once the call's context has ended, and of
// its kind); a call made with a context that had ended returns at once,
// waiting for nothing (counted by sim.BeginCallCounted: a Release still starts, and its node
// goes); liveness: once the faults stop, every client completes a
// critical section within Recovery (a lock left held by a Release that
// did nothing blocks every other client until its session ends, and its
// own Client refuses every later Acquire); quiescence: every hold given
// back with Release, whatever its context, has its Done closed, and no
// contender node is left.
type blockingSim struct {
	clients  int
	r        *sim.Trial
	cl       []*Client
	released []given[*Held] // given back, by processes that have not crashed since
	aimed    bool           // an ACL fault aimed at a Release this seed (aimRelease)
	// restarted: a restart aimed at a clean-up this seed (aimRestart);
	// live: the nodes given back by a Release called with a live context
	// (the deletes not aimed at).
	restarted bool
	live      map[string]bool
	// twinsCut: an operator's delete aimed this seed at the lower of two
	// write contender nodes of one Client (aimTwins).
	twinsCut bool
	// holding: the holds an actor has acquired and not yet given to
	// Release, by node path, with the count of holds registered when
	// it came (registered): a try whose ErrBusy names one of them,
	// registered before the try began, was not refused with
	// ErrAlreadyHeld as the Client's doc says.
	holding    map[string]heldBy
	registered int
	ended      [numEnds]int // rounds by where their context ended, that acquired
	tried      [numEnds]int
	// The errors of calls judged (sim.Call.Judge), and the calls made
	// with a context that had ended judged at once.
	errsJudged, atOnceJudged int
}

func newBlockingSim() (*blockingSim, sim.Scenario) {
	s := &blockingSim{clients: 3}
	return s, sim.Scenario{
		Name:       "rwlock/blocking",
		InJobEnds:  true,
		ActorLag:   true,
		OutageEnds: true,
		Clients:    s.clients,
		Wrap: func(i int, c *fakezk.Conn) task.Conn {
			return sim.AfterSend(c, func(req task.Request) {
				s.aimRestart(i, req)
				s.aimTwins(i, req)
			})
		},
		Faults: sim.Faults{Allow: sim.AllFaults | sim.CounterFaults | sim.Of(sim.ACL), MaxRate: 0.01},
		ACL:    []string{bsimDir},
		Regressions: []sim.Regression{
			{Seed: 252, Root: sim.ExploreRoot, Why: "liveness, acl class: the cleanup of an attempt canceled as its create was applied could not list the closed directory, and its node stayed until the session ended (now run again in the background: zkops.StartCleanup)"},
			{Seed: 2467, ReconnectLag: true, Blinks: true, SyncAfterReconnect: sim.SyncedSeed(2467), Canary: string(bugKeepLastWriter), Why: "safety with canary rwlock/keep-last-writer only (the seed passes on the code): two goroutines of one Client took the write lock at once, an operator's delete aimed at the lower write node (aimTwins), and the goroutine handed that lost hold saw its outcome after the other's; the Client recorded the lost hold, and once its loss was known a TryAcquireRead failed with ErrBusy behind the Client's own live write node (the judge of every ErrBusy names it since 2026-12-07). The scenario reaches that schedule about once in 10,000 seeds (two write acquires of one Client at once are one round pair in nine), so no hunt runs for it: this seed keeps the judge honest"},
			{Seed: 169, ReconnectLag: true, Canary: string(bugRefusedReleaseUncounted), Why: "acl class: a Release whose delete the closed directory refused went on in the background uncounted; once the ACL was back the Client's next TryAcquire failed with ErrBusy behind the Client's own released node (the refused delete now stays counted until the node is gone: zkops.Holding.CountKept; canary rwlock/refused-release-uncounted)"},
		},
		Counters:           []string{bsimDir},
		Duration:           15 * time.Second,
		Setup:              s.setup,
		Workload:           func(r *sim.Trial) { s.start(r) },
		Restart:            func(r *sim.Trial, i int) { s.startClient(r, i) },
		Operator:           []string{bsimDir},
		OwnDeletes:         []string{bsimDir},
		OperatorWrites:     true,
		OperatorDeleteOnly: []string{bsimDir + "/"},
		Quiesce: func(r *sim.Trial) bool {
			if r.Actors() > 0 || len(r.Children(bsimDir)) > 0 {
				return false
			}
			for _, g := range s.released {
				if g.h.Err() == nil && r.Incarnation(g.client) == g.inc {
					return false
				}
			}
			return true
		},
		Invariants: []sim.Invariant{
			sim.InvariantFunc(func(r *sim.Trial) error {
				log, err := sim.FenceLog(r.World, bsimLog)
				if err != nil {
					return err
				}
				return judgeModes(log)
			}),
			sim.InvariantFunc(func(r *sim.Trial) error {
				for _, g := range s.released {
					if g.h.Err() == nil && r.Incarnation(g.client) == g.inc {
						return fmt.Errorf("%s given back with Release, and its Done never closed", g.h.Path())
					}
				}
				return nil
			}),
		},
	}
}

func (s *blockingSim) setup(r *sim.Trial) error {
	s.r, s.cl, s.released, s.aimed = r, make([]*Client, s.clients), nil, false
	s.restarted, s.live, s.twinsCut = false, map[string]bool{}, false
	s.holding, s.registered = map[string]heldBy{}, 0
	for _, p := range []string{bsimLog, "/rw"} {
		if _, err := sim.Run(r.World, 0, task.Create(p, nil, task.Persistent)); err != nil {
			return err
		}
	}
	return nil
}

func (s *blockingSim) start(r *sim.Trial) {
	for i := range s.clients {
		s.startClient(r, i)
	}
}

// startClient gives client i (its process now) a Client and two actors.
func (s *blockingSim) startClient(r *sim.Trial, i int) {
	c, err := NewClient(r.Execs[i], bsimDir)
	if err != nil {
		r.Errorf("client %d: %v", i, err)
		return
	}
	s.cl[i] = c
	for range 2 {
		r.Go(i, func(a *sim.Actor) {
			eager := false
			for !r.Stopping() && a.Context().Err() == nil {
				eager = s.round(r, a, c, eager)
			}
		})
	}
}

// round is one acquire, section, release of actor a, its context ending
// where the draw says. An eager round (the actor's Release was refused
// by an ACL, and it tries again at once: round's result) is a
// TryAcquire with a live context, and stays eager, a few tens of
// milliseconds later, while the ACL refuses the try too; round reports
// whether the next round is eager.
func (s *blockingSim) round(r *sim.Trial, a *sim.Actor, c *Client, eager bool) (next bool) {
	i := a.Client()
	rnd := a.Rand()
	end, try := endNone, true
	if !eager {
		if rnd.IntN(3) > 0 {
			end = 1 + rnd.IntN(numEnds-1)
		}
		try = rnd.IntN(3) == 0 // TryAcquire or TryAcquireRead instead
	}
	s.tried[end]++
	ctx, cancel := a.WithCancel(a.Context())
	defer cancel()
	switch end {
	case endBefore:
		cancel()
	case endDuring:
		if rnd.IntN(2) == 0 {
			ctx, cancel = a.CancelAfterSteps(ctx, rnd.IntN(12))
		} else {
			ctx, cancel = a.WithTimeout(ctx, time.Duration(rnd.Int64N(int64(2*time.Second))))
		}
		defer cancel()
	}
	write := eager || rnd.IntN(3) == 0
	acquire, pre, how := c.AcquireRead, "r", "acquire-read"
	switch {
	case write && try:
		acquire, pre, how = c.TryAcquire, "w", "try-acquire"
	case write:
		acquire, pre, how = c.Acquire, "w", "acquire"
	case try:
		acquire, how = c.TryAcquireRead, "try-acquire-read"
	}
	givenBefore := len(s.released) // holds given back before this attempt began
	registeredBefore := s.registered
	call, cctx := sim.BeginCallCounted(r, a, ctx)
	h, err := acquire(cctx)
	if call.Judge(how, err, s.acquireRules(i, try, write)) {
		s.atOnceJudged++
	}
	if err != nil {
		r.Logf("client %d actor %d (ctx ends %s): %s: %v", i, a.ID(), endNames[end], how, err)
		switch {
		case try && errors.Is(err, ErrBusy): // another contender is ahead
			// Not a node of this Client's that a Release returned
			// from before the try began: the Client waits for its
			// own deletes in the background, also those an ACL
			// refused (the Client's doc).
			if own, ahead, ok := strings.Cut(err.Error(), " is behind "); ok {
				// No node of the try is left: it withdraws its node
				// before it fails with ErrBusy (RWLock.TryAcquire).
				own = own[strings.LastIndexByte(own, ' ')+1:]
				if st, ok := r.NodeStat(own); ok && !r.Closing() {
					r.Errorf("client %d: %s busy (%v), and its node (czxid %#x) is still there", i, how, err, st.Czxid)
				}
				for _, g := range s.released[:givenBefore] {
					if g.client == i && g.inc == r.Incarnation(i) && r.ServerPath(g.h.Path()) == r.ServerPath(ahead) {
						r.Errorf("client %d: %s busy behind %s, a node of a hold this Client gave back before the try began", i, how, ahead)
					}
				}
				// Nor one of a hold of this Client's other goroutine,
				// acquired before the try began and still that node
				// (not made again by an operator): a try behind it is
				// one the Client's doc refuses with ErrAlreadyHeld (a
				// write try while the Client holds in either mode, a
				// read try while it holds the write lock).
				if hb, ok := s.holding[r.ServerPath(ahead)]; ok && hb.client == i && hb.inc == r.Incarnation(i) && hb.at < registeredBefore {
					if _, st, ok := r.NodeData(ahead); ok && st.Czxid == hb.h.Token() {
						r.Errorf("client %d: %s busy behind %s, the node of this Client's hold (token %d) acquired before the try began: not refused with ErrAlreadyHeld", i, how, ahead, hb.h.Token())
					}
				}
			}
		default:
			s.errsJudged++
		}
		if eager && errors.Is(err, task.ErrNoAuth) {
			_ = a.Sleep(a.Context(), time.Duration(rnd.Int64N(int64(50*time.Millisecond))))
			return true
		}
		_ = a.Sleep(a.Context(), time.Duration(rnd.Int64N(int64(300*time.Millisecond))))
		return false
	}
	s.ended[end]++
	r.Logf("client %d actor %d (ctx ends %s): %s: acquired %s", i, a.ID(), endNames[end], how, h.Path())
	s.holding[r.ServerPath(h.Path())] = heldBy{h: h, client: i, inc: r.Incarnation(i), at: s.registered}
	s.registered++
	// The doc's pattern: the release deferred, with the call's context.
	defer func() {
		if end == endRelease {
			var rc context.CancelFunc
			ctx, rc = a.CancelAfterSteps(ctx, rnd.IntN(4))
			defer rc()
		}
		if ctx.Err() == nil && end != endRelease {
			s.live[h.Path()] = true // its delete is not aimed at (aimRestart)
		}
		delete(s.holding, r.ServerPath(h.Path()))
		aimed := s.aimRelease(r, a, h)
		call, cctx := sim.BeginCallCounted(r, a, ctx)
		err := c.Release(cctx, h)
		r.Logf("client %d actor %d: release %s: %v", i, a.ID(), h.Path(), err)
		if !a.Killed() {
			s.released = append(s.released, given[*Held]{h, i, r.Incarnation(i)})
			// Refused by an ACL: one time in two, and always after
			// an aimed fault, the actor tries again at once.
			next = err != nil && (aimed || errors.Is(err, task.ErrNoAuth) && rnd.IntN(2) == 0)
		}
		// (With a context that had ended, the release goes on in the
		// background: the invariant sees its Done closed, Quiesce its
		// node gone.)
		if call.Judge("release "+h.Path(), err, releaseRules) {
			s.atOnceJudged++
		}
		if err != nil {
			s.errsJudged++
		}
		if err == nil && !a.Killed() && !r.Closing() {
			released(r, i, h)
		}
	}()
	bar := r.OpenSpan(i, "lock", "token "+strconv.FormatInt(h.Token(), 10))
	defer r.CloseSpan(bar)
	sctx := ctx
	switch end {
	case endAfter:
		cancel()
	case endInside:
		var sc context.CancelFunc
		sctx, sc = a.CancelAfterSteps(ctx, rnd.IntN(10))
		defer sc()
		ctx = sctx
	}
	if err := s.fenced(r, a, c, sctx, h, pre+"enter"); err != nil {
		return
	}
	if err := a.Sleep(sctx, time.Duration(100+rnd.Int64N(900))*time.Millisecond); err != nil {
		return
	}
	if err := s.fenced(r, a, c, sctx, h, pre+"exit"); err != nil {
		return
	}
	r.Progress(i)
	return
}

// aimRelease aims the acl class at h's Release, about to be sent, in a
// seed whose plan has that class: when h's node is the directory's
// highest contender (a writer's node then the only one, a reader's with
// only readers below it), one time in two and once a seed, the
// directory is closed (Trial.ACLNow) for up to a session timeout, so
// that the delete is refused and the ACL is back before the Client's
// background delete tries again (twice the session timeout later), with
// no other contender queued between the released node and the next one
// made: the next try's node is right above it, and a writer's try finds
// it in the way whatever its mode. The injector's ACL faults come at
// random moments, and seldom at such a release. It reports whether it
// closed the directory. Draws only in such seeds, at such a release.
func (s *blockingSim) aimRelease(r *sim.Trial, a *sim.Actor, h *Held) bool {
	if s.aimed || r.Plan.ACLRate == 0 || !r.FaultsOn() || r.Stopping() {
		return false
	}
	if q := queue(r.Children(bsimDir)); len(q) == 0 || r.ServerPath(bsimDir+"/"+q[len(q)-1].name) != r.ServerPath(h.Path()) {
		return false
	}
	s.aimed = r.AimACL(a.Rand(), bsimDir)
	return s.aimed
}

// aimRestart aims a server restart (Trial.AimRestart, drawn from
// Trial.Rand, which nothing else in this scenario draws from) at the
// first delete of a contender node that client i sends in the faults
// phase (sim.AfterSend), once a seed, in a seed whose plan has the
// Restart class, unless a Release called with a live context gives the
// node back: as recipes/lock's blocking scenario, whose doc says which
// deletes those are and what the restart races.
func (s *blockingSim) aimRestart(i int, req task.Request) {
	d, ok := req.(*task.DeleteRequest)
	if !ok || s.restarted || !strings.HasPrefix(d.Path, bsimDir+"/") || s.live[d.Path] || !s.r.FaultsOn() {
		return
	}
	if s.restarted = s.r.AimRestart(s.r.Rand, i); s.restarted {
		s.r.Logf("client %d: restart aimed at the delete of %s", i, d.Path)
	}
}

// aimTwins: in a seed whose plan has the operator class, once, when
// client i lists the directory while it has two write contender nodes
// there (its two goroutines taking the write lock at once through its one
// Client), an operator deletes the lower of them, as recipes/lock's
// blocking scenario does (canary rwlock/keep-last-writer).
func (s *blockingSim) aimTwins(i int, req task.Request) {
	g, ok := req.(*task.GetChildrenRequest)
	if !ok || s.twinsCut || g.Path != bsimDir || !s.r.FaultsOn() {
		return
	}
	name, n := s.r.LowestOwned(bsimDir, i, func(k string) bool { return strings.Contains(k, writeTag) })
	if n < 2 {
		return
	}
	low := bsimDir + "/" + name
	if s.twinsCut = s.r.OperatorDeleteNow(low); s.twinsCut {
		s.r.Logf("client %d: operator's delete aimed at %s, the lower of its two write contenders", i, low)
	}
}

// heldBy is a hold of blockingSim.holding: its client, incarnation and
// registration count.
type heldBy struct {
	h       *Held
	client  int
	inc, at int
}

// fenced writes the fenced entry kind of actor a's hold h through c
// with ctx, and judges the outcome by the doc of Client.Fenced and
// Held.Fenced (fencedRules).
func (s *blockingSim) fenced(r *sim.Trial, a *sim.Actor, c *Client, ctx context.Context, h *Held, kind string) error {
	call, cctx := sim.BeginCallCounted(r, a, ctx)
	_, err := c.Fenced(cctx, h, sim.FencedEntry(bsimLog, h.Token(), kind))
	if call.Judge("fenced "+kind, err, fencedRules) {
		s.atOnceJudged++
	}
	if err != nil {
		s.errsJudged++
	}
	return err
}

// acquireRules are the rules of client i's acquire (a try if try, of
// the write lock if write) beyond sim.Call's (sim.Call.Judge;
// Client.Acquire and RWLock.Acquire): ErrAlreadyHeld, only while the
// Client holds the lock in a mode the call conflicts with (s.holds), and
// at once whatever its context (refused before it waits for anything);
// task.ErrSessionExpired (the contender node went with the session: the
// Client does not run the acquire again); ErrLockLost (an operator
// deleted the contender node); an operator's ACL refusing it; ErrBusy
// from a try (judged apart: the scenario's round). Never ErrBusy from an
// acquire that waits, nor a connection loss or "not sent": the acquire
// retries past them (the task fails only with an error a retry cannot
// settle). With a context that had ended, an acquire submits nothing and
// waits for nothing (sim.BeginCallCounted, as every call here).
func (s *blockingSim) acquireRules(i int, try, write bool) sim.CallRules {
	may := []error{task.ErrSessionExpired, ErrLockLost, task.ErrNoAuth}
	if try {
		may = append(may, ErrBusy)
	}
	return sim.CallRules{May: may, Refused: alreadyHeld, Also: func(err error) (string, bool) {
		switch {
		case errors.Is(err, ErrAlreadyHeld):
			if !s.holds(s.r, i, write) {
				return "the Client holds no lock the call conflicts with", true
			}
			return "", true
		case errors.Is(err, ErrBusy) && !try:
			return "ErrBusy from an acquire that waits", true
		}
		return "", false
	}}
}

var alreadyHeld = []error{ErrAlreadyHeld}

// releaseRules are Release's (Client.Release, Held.Release): an
// operator's ACL refusing the delete (it goes on in the background).
// Never task.ErrSessionExpired (a session that ended took the node: that
// is success), nor a connection loss or "not sent" (the delete retries
// past them). With a context that had ended, it starts the release in
// the background.
var releaseRules = sim.CallRules{May: []error{task.ErrNoAuth}}

// fencedRules are Fenced's (Client.Fenced, Held.Fenced): ErrLockLost
// (the check failed: the node deleted, by an operator or with the
// session, or its ACL closed); task.ErrSessionExpired, a connection loss
// or "not sent" (the multi's own error: it is not retried); an
// operator's ACL refusing it. With a context that had ended, it sends
// nothing.
var fencedRules = sim.CallRules{May: []error{ErrLockLost, task.ErrSessionExpired, task.ErrConnectionLoss, task.ErrNotSent, task.ErrNoAuth}}

// holds reports whether client i's Client holds, for its current
// process, a lock an acquire of the write lock (write) or of the read
// lock conflicts with (the Client's doc: a write acquire fails with
// ErrAlreadyHeld while the Client holds the lock in either mode, a read
// acquire while it holds the write lock): a hold one of its goroutines
// acquired and has not yet given to Release (s.holding).
func (s *blockingSim) holds(r *sim.Trial, i int, write bool) bool {
	for _, hb := range s.holding {
		if hb.client == i && hb.inc == r.Incarnation(i) && (write || hb.h.Mode() == Write) {
			return true
		}
	}
	return false
}

// released judges client i's hold h after Client.Release returned nil:
// the release has run, and its node is gone (Held.Release deletes the
// node: a node already gone, or a session that ended, is success; and
// the node's czxid names it, whatever was made at the path since). (Not
// its Err: the first look at a hold's Done or Err has its executor watch
// the node, and a judge that looked would change the seed's history.)
func released(r *sim.Trial, i int, h *Held) {
	if st, ok := r.NodeStat(h.Path()); ok && st.Czxid == h.Token() {
		r.Errorf("client %d: Release of %s returned nil, and its node (czxid %#x) is still there", i, h.Path(), st.Czxid)
	}
}

func (s *blockingSim) report(t *testing.T) {
	t.Helper()
	line := ""
	for e := range numEnds {
		line += fmt.Sprintf(" %s=%d/%d", endNames[e], s.ended[e], s.tried[e])
	}
	t.Logf("rounds by where the context ended (acquired/tried):%s; %d errors of calls judged, %d calls made with a context that had ended judged", line, s.errsJudged, s.atOnceJudged)
}

func TestBlockingSimulation(t *testing.T) {
	s, sc := newBlockingSim()
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	if st := sim.Check(t, sc, seeds); st.Failures() > 0 {
		return
	}
	s.report(t)
	for _, e := range []int{endNone, endAfter, endInside, endRelease} {
		if s.ended[e] == 0 {
			t.Errorf("no round acquired with its context ending %s: the scenario checks nothing there", endNames[e])
		}
	}
	if s.errsJudged == 0 || s.atOnceJudged == 0 {
		t.Errorf("%d errors of calls judged, %d calls made with a context that had ended: the judge checks nothing", s.errsJudged, s.atOnceJudged)
	}
}

// The same seed replays the same history, actors included.
func TestSimDeterminism(t *testing.T) {
	_, sc := newBlockingSim()
	sim.Determinism(t, sc, sim.Sample(6, 1000))
}

// The large run of make sim: SIM_SEEDS seeds (skipped when unset).
func TestSimExplore(t *testing.T) {
	_, sc := newBlockingSim()
	sim.Explore(t, sc)
}

// A Release whose delete an ACL refused, its delete left to go on in the
// background uncounted (the canary), has the Client's next try fail with
// ErrBusy behind the Client's own node once the ACL is back: the
// scenario's judge of every ErrBusy catches it (the acl class), once the
// class is aimed at a Release of the directory's highest contender and
// its actor tries again at once (aimRelease, the eager rounds). This
// test's three hunts need 49, 21 and 3 seeds since the scenario aims a
// restart at a clean-up (aimRestart; 10, 10 and 3 before), and 50 more
// from seeds 61,100,000 and 61,400,000 up needed 1 to 58 (median 9; 1
// to 58, median 10, before); 56 more before it, from other seeds
// (55,000,001 up), needed 1 to 79 (median 12): the bound, 300, is the
// worst seen with a margin (nearly four times). Before the aimed fault
// and the eager rounds, its hunts needed 169, 291 and 553 seeds (bound
// 1500).
func TestCanaryRefusedReleaseUncounted(t *testing.T) {
	if testing.Short() {
		t.Skip("the canary hunts up to 300 seeds of the blocking scenario")
	}
	restore := canary.Enable(bugRefusedReleaseUncounted)
	defer restore()
	_, sc := newBlockingSim()
	sim.Catch(t, sc, string(bugRefusedReleaseUncounted), 3, 300)
}

// The regression seeds of the blocking scenario, in every plain go test
// too.
func TestBlockingSimRegressions(t *testing.T) {
	_, sc := newBlockingSim()
	sim.Regressions(t, sc)
}

// judgeModes judges a fencing log of readers and writers (kinds
// renter/rexit, wenter/wexit): in the server's order, the span of a
// writer's entries overlaps no other holder's span; readers' spans may
// overlap each other. No holder enters with a writer's token after an
// exit (the doc: a writer's token is above every earlier holder's and
// below every later one's). No "late" entry (a write after a loss)
// applied.
func judgeModes(log []sim.LogEntry) error {
	type span struct {
		token       int64
		first, last int
		write       bool
	}
	var spans []*span
	by := map[int64]*span{}
	for k, e := range log {
		if e.Kind == "late" {
			return fmt.Errorf("a fenced write after the lock was lost was applied: token %d, seq %d", e.Token, e.Seq)
		}
		sp := by[e.Token]
		if sp != nil && strings.HasSuffix(e.Kind, "enter") && !strings.HasSuffix(log[sp.last].Kind, "enter") && (sp.write || e.Kind[0] == 'w') {
			// The doc: a writer's token is above every earlier holder's
			// and below every later one's, so no holder shares it.
			return fmt.Errorf("two holders with one token: token %d %s (seq %d) after its %s (seq %d)", e.Token, e.Kind, e.Seq, log[sp.last].Kind, log[sp.last].Seq)
		}
		if sp == nil {
			sp = &span{token: e.Token, first: k, write: e.Kind[0] == 'w'}
			by[e.Token] = sp
			spans = append(spans, sp)
		}
		sp.last = k
	}
	for _, a := range spans {
		for _, b := range spans {
			if a != b && a.write && a.first <= b.last && b.first <= a.last {
				return fmt.Errorf("holders overlap: writer token %d (entries %d-%d) and token %d (entries %d-%d)",
					a.token, log[a.first].Seq, log[a.last].Seq, b.token, log[b.first].Seq, log[b.last].Seq)
			}
		}
	}
	return nil
}

// given is a hold given back by client's process inc: judged only while
// that process lives (a crashed process's give-back never completes, and
// its session's end takes the node).
type given[H any] struct {
	h           H
	client, inc int
}

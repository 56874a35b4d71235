package lock

// The blocking face under the simulation. These tests are in the package
// itself (not lock_test) so that their TestSimExplore and
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
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

const (
	bsimDir = "/locks/b"
	bsimLog = "/blog"
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

// blockingSim drives the lock through its Client from actors: each of 3
// clients has one Client shared by 2 goroutines, each looping: draw
// where its context will end (nowhere, before Acquire, during it, just
// after, inside the critical section, during Release), Acquire (or, one
// round in three, TryAcquire, whose ErrBusy ends the round), write
// "enter" and "exit" fenced entries with a sleep between, and Release
// with the same context, deferred as the doc's pattern has it. A Release
// an ACL refused (task.ErrNoAuth) has its actor, one time in two, try
// again at once: TryAcquire with a live context, every few tens of
// milliseconds while the ACL refuses that too (an eager round). In seeds
// whose plan has the acl class, the scenario aims that class at a
// Release once (aimRelease): the directory closed just before the
// delete, for up to a session timeout, when the released node is the
// directory's only child; its actor's next rounds are eager. In seeds
// whose plan has the restart class, it aims a server restart once at
// the first delete of a contender node that is not a Release's with a
// live context (aimRestart): a Release's whose context had ended, an
// attempt's withdrawn as its context ended, a try's behind another.
//
// Judged by: the fencing log (mutual exclusion: tokens never go down in
// the server's order, and strictly increase from one holder to the next,
// no write after a loss applied); liveness: once the
// faults stop, every client completes a critical section within Recovery
// (a lock left held by a Release that did nothing blocks every other
// client until its session ends, and its own Client refuses every later
// Acquire); quiescence: every hold given back with Release, whatever its
// context, has its Done closed, and no contender node is left. Each
// call's outcome is judged by what its doc promises (sim.Call.Judge;
// judgeAcquire): a context's error only once the call's context
// has ended, and of its kind; no connection loss or "not sent" but from
// Fenced (an acquire's operations and a release's delete are retried
// past them); no session expiry from Release (a session that ended took
// the node); ErrAlreadyHeld only while the Client holds the lock, and at
// once; and a call whose context had ended before it returns that
// context's error at once.
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
	// twinsCut: an operator's delete aimed this seed at the lower of two
	// contender nodes of one Client (aimTwins).
	twinsCut bool
	// holding: the holds an actor has acquired and not yet given to
	// Release, by node path, with the count of holds registered when
	// it came (registered): a try whose ErrBusy names one of them,
	// registered before the try began, was not refused with
	// ErrAlreadyHeld as the Client's doc says.
	holding    map[string]heldBy
	registered int
	live       map[string]bool
	ended      [numEnds]int // rounds by where their context ended, that acquired
	tried      [numEnds]int
}

func newBlockingSim() (*blockingSim, sim.Scenario) {
	s := &blockingSim{clients: 3}
	return s, sim.Scenario{
		Name:       "lock/blocking",
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
		Faults:   sim.Faults{Allow: sim.AllFaults | sim.CounterFaults | sim.Of(sim.ACL), MaxRate: 0.01},
		Counters: []string{bsimDir},
		ACL:      []string{bsimDir},
		Regressions: []sim.Regression{
			{Seed: 56, ReconnectLag: true, Root: sim.ExploreRoot, Why: "liveness: a create whose reply a cut lost, the session back through a member that had not applied it (Server.LagAtReconnect): the settle listing missed the node, the acquire made a second one and waited behind its own first (zkops.Prefixed now lists after a sync)"},
			{Seed: 10, Why: "liveness, acl class: a waiter behind a contender made unreadable and then deleted never heard of the delete (ZooKeeper withholds it); now the wait reads the node again (task.Watch)"},
			{Seed: 31, Why: "liveness, acl class: a Release whose delete the closed directory refused left the node until its session ended (now sent again in the background: zkops.KeepDeleting)"},
			{Seed: 3733, Why: "safety, acl class: the directory closed, deleted and made again by an operator, its NodeDeleted withheld, a re-acquire took the fast path on a number of the new incarnation and held beside the holder (the fast create now reads the directory's czxid in the same round trip)"},
			{Seed: 1000011, ReconnectLag: true, Why: "acl class: the first seed that found the refused release uncounted (canary lock/refused-release-uncounted); kept, though since deletes read after a sync it no longer reaches that schedule (1000014 does)"},
			{Seed: 1000014, Canary: string(bugRefusedReleaseUncounted), Why: "acl class: a Release whose delete the closed directory refused went on in the background uncounted; once the ACL was back the Client's next TryAcquire, the lock free, failed with ErrBusy behind the Client's own node (the refused delete now stays counted until the node is gone; canary lock/refused-release-uncounted)"},
		},
		Duration:           15 * time.Second,
		Setup:              s.setup,
		Workload:           func(r *sim.Trial) { s.start(r) },
		Restart:            func(r *sim.Trial, i int) { s.startClient(r, i) },
		Operator:           []string{bsimDir},
		OwnDeletes:         []string{bsimDir},
		OperatorDeleteOnly: []string{bsimDir + "/"},
		Quiesce: func(r *sim.Trial) bool {
			if r.Actors() > 0 || len(r.Children(bsimDir)) > 0 {
				return false
			}
			for _, g := range s.released {
				if !g.h.isOver() && r.Incarnation(g.client) == g.inc {
					return false
				}
			}
			return true
		},
		Invariants: []sim.Invariant{
			sim.Fencing(bsimLog),
			sim.InvariantFunc(func(r *sim.Trial) error {
				for _, g := range s.released {
					if !g.h.isOver() && r.Incarnation(g.client) == g.inc {
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
	for _, p := range []string{bsimLog, "/locks"} {
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
		try = rnd.IntN(3) == 0 // TryAcquire instead of Acquire
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
	acquire, how := c.Acquire, "acquire"
	if try {
		acquire, how = c.TryAcquire, "try-acquire"
	}
	givenBefore := len(s.released) // holds given back before this attempt began
	registeredBefore := s.registered
	call := sim.BeginCall(r, a, ctx)
	h, err := acquire(ctx)
	s.judgeAcquire(r, a, how, call, try, err)
	if err != nil {
		r.Logf("client %d actor %d (ctx ends %s): %s: %v", i, a.ID(), endNames[end], how, err)
		switch {
		case try && errors.Is(err, ErrBusy): // another contender is ahead
			// Not a node of this Client's that a Release returned
			// from before the try began: the Client waits for its
			// own deletes in the background, also those an ACL
			// refused (the Client's doc).
			if _, ahead, ok := strings.Cut(err.Error(), " is behind "); ok {
				for _, g := range s.released[:givenBefore] {
					if g.client == i && g.inc == r.Incarnation(i) && r.ServerPath(g.h.Path()) == r.ServerPath(ahead) {
						r.Errorf("client %d: try-acquire busy behind %s, a node of a hold this Client gave back before the try began", i, ahead)
					}
				}
				// Nor one of a hold of this Client's other goroutine,
				// acquired before the try began and still that node
				// (not made again by an operator): the Client held the
				// lock, and the try must fail with ErrAlreadyHeld.
				if hb, ok := s.holding[r.ServerPath(ahead)]; ok && hb.client == i && hb.inc == r.Incarnation(i) && hb.at < registeredBefore {
					if _, st, ok := r.NodeData(ahead); ok && st.Czxid == hb.h.Token() {
						r.Errorf("client %d: try-acquire busy behind %s, the node of this Client's hold (token %d) acquired before the try began: not refused with ErrAlreadyHeld", i, ahead, hb.h.Token())
					}
				}
			}
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
		call := sim.BeginCall(r, a, ctx)
		err := c.Release(ctx, h)
		r.Logf("client %d actor %d: release %s: %v", i, a.ID(), h.Path(), err)
		call.Judge("release", err, releaseRules)
		if !a.Killed() {
			s.released = append(s.released, given[*Held]{h, i, r.Incarnation(i)})
			// Refused by an ACL: one time in two, and always after
			// an aimed fault, the actor tries again at once.
			next = err != nil && (aimed || errors.Is(err, task.ErrNoAuth) && rnd.IntN(2) == 0)
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
	if !fenced(r, a, c, sctx, h, sim.FencedEntry(bsimLog, h.Token(), "enter")) {
		return
	}
	if err := a.Sleep(sctx, time.Duration(100+rnd.Int64N(900))*time.Millisecond); err != nil {
		return
	}
	if !fenced(r, a, c, sctx, h, sim.FencedEntry(bsimLog, h.Token(), "exit")) {
		return
	}
	r.Progress(i)
	return
}

// aimRelease aims the acl class at h's Release, about to be sent, in a
// seed whose plan has that class: when h's node is the directory's only
// child, one time in two and once a seed, the directory is closed
// (Trial.ACLNow) for up to a session timeout, so that the delete is
// refused and the ACL is back before the Client's background delete
// tries again (twice the session timeout later), with no other contender
// queued between the released node and the next one made. The injector's
// ACL faults come at random moments, and seldom at such a release (the
// directory is rarely that empty under six actors). It reports whether
// it closed the directory. Draws only in such seeds, at such a release.
func (s *blockingSim) aimRelease(r *sim.Trial, a *sim.Actor, h *Held) bool {
	if s.aimed || r.Plan.ACLRate == 0 || !r.FaultsOn() || r.Stopping() {
		return false
	}
	if ch := r.Children(bsimDir); len(ch) != 1 || r.ServerPath(bsimDir+"/"+ch[0]) != r.ServerPath(h.Path()) {
		return false
	}
	s.aimed = r.AimACL(a.Rand(), bsimDir)
	return s.aimed
}

// aimRestart aims a server restart (Trial.AimRestart, drawn from
// Trial.Rand, which nothing else in this scenario draws from) at the
// first delete of a contender node that client i sends in the faults
// phase (sim.AfterSend), once a seed, in a seed whose plan has the Restart class, unless the node is
// one a Release called with a live context gives back: the delete of a
// Release whose context had ended or ends while it runs (left to the
// background), of an attempt withdrawn as its context ended (its create
// applied), or of a try's node behind another contender. The delete is
// applied in two restarts of three, its reply lost, and every client is
// back at the same instant, so the delete's retry (or the read of its
// outcome) races the other clients' creates and their wait on the node
// it gives back, where a cut of the one client would have it come back
// after they had acted on it.
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
// client i lists the directory while it has two contender nodes there
// (its two goroutines acquiring at once through its one Client), an
// operator deletes the lower of them: one acquire is handed a hold whose
// node is gone, the other holds behind it, and with actors waking late
// the Client may see the lost one last (canary lock/keep-last-won).
func (s *blockingSim) aimTwins(i int, req task.Request) {
	g, ok := req.(*task.GetChildrenRequest)
	if !ok || s.twinsCut || g.Path != bsimDir || !s.r.FaultsOn() {
		return
	}
	name, n := s.r.LowestOwned(bsimDir, i, nil)
	if n < 2 {
		return
	}
	low := bsimDir + "/" + name
	if s.twinsCut = s.r.OperatorDeleteNow(low); s.twinsCut {
		s.r.Logf("client %d: operator's delete aimed at %s, the lower of its two contenders", i, low)
	}
}

// heldBy is a hold of blockingSim.holding: its client, incarnation and
// registration count.
type heldBy struct {
	h       *Held
	client  int
	inc, at int
}

// The rules of the Client's calls beyond sim.Call's (each call's outcome
// is judged by what its doc promises: sim.Call.Judge). Every call may end
// with task.ErrNoAuth, an operator's ACL refusing it for a while; nothing
// else but these: no connection loss or "not sent" but from Fenced (an
// acquire's operations and a release's delete are retried past them:
// PROTOCOL.md), and no session expiry from Release (a session that ended
// took the node: a success).
//
// acquireMay are the errors Acquire may end with (the task face's,
// Lock.Acquire, which the Client runs once): the session's expiry (the
// contender node went with it), ErrLockLost (someone else deleted the
// contender node), and ErrAlreadyHeld (judgeAcquire); tryMay,
// TryAcquire's: ErrBusy too. Each parks behind this Client's deletes in
// the background, and may wake late.
var (
	acquireMay = []error{task.ErrNoAuth, task.ErrSessionExpired, ErrLockLost}
	tryMay     = []error{task.ErrNoAuth, task.ErrSessionExpired, ErrLockLost, ErrBusy}
	// alreadyHeld is refused at once, whatever the call's context: the
	// Client refuses re-entry before it waits for anything.
	alreadyHeld = []error{ErrAlreadyHeld}
)

// fencedRules: the errors Fenced may end with (Held.Fenced): ErrLockLost
// (a refused check, or the hold known ended), the session's expiry, a
// connection loss or "not sent" (a multi is not retried: its outcome is
// unknown). It submits nothing with a context that had ended.
var fencedRules = sim.CallRules{May: []error{task.ErrNoAuth, ErrLockLost, task.ErrSessionExpired, task.ErrConnectionLoss, task.ErrNotSent}}

// releaseRules: Release ends with nothing else; with a context that had
// ended it starts the release in the background, which the scenario's
// quiescence sees through (Done closed, no contender node left).
var releaseRules = sim.CallRules{May: []error{task.ErrNoAuth}}

// judgeAcquire judges an Acquire or TryAcquire (how, try) of actor a (c:
// as it began) that returned err: sim.Call.Judge, with ErrAlreadyHeld
// only while this Client holds the lock (a hold of its other goroutine
// not yet given to Release, the scenario's holding, and not known to have
// ended: a lost hold holds nothing), at once.
func (s *blockingSim) judgeAcquire(r *sim.Trial, a *sim.Actor, how string, c sim.Call, try bool, err error) {
	may := acquireMay
	if try {
		may = tryMay
	}
	c.Judge(how, err, sim.CallRules{May: may, Parks: true, Refused: alreadyHeld, RefusesAtOnce: true, Also: func(err error) (string, bool) {
		if !errors.Is(err, ErrAlreadyHeld) {
			return "", false
		}
		i, held := a.Client(), false
		for _, hb := range s.holding {
			held = held || hb.client == i && hb.inc == r.Incarnation(i) && !hb.h.isOver()
		}
		if !held {
			return "while this Client holds no lock", true
		}
		return "", true
	}})
}

// fenced is one Fenced write of hold h with ctx, judged; it reports
// whether it was applied.
func fenced(r *sim.Trial, a *sim.Actor, c *Client, ctx context.Context, h *Held, op task.MultiOp) bool {
	call := sim.BeginCall(r, a, ctx)
	_, err := c.Fenced(ctx, h, op)
	call.Judge("fenced write", err, fencedRules)
	return err == nil
}

func (s *blockingSim) report(t *testing.T) {
	t.Helper()
	line := ""
	for e := range numEnds {
		line += fmt.Sprintf(" %s=%d/%d", endNames[e], s.ended[e], s.tried[e])
	}
	t.Logf("rounds by where the context ended (acquired/tried):%s", line)
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

// given is a hold given back by client's process inc: judged only while
// that process lives (a crashed process's give-back never completes, and
// its session's end takes the node).
type given[H any] struct {
	h           H
	client, inc int
}

// A lock acquired by a flow that was ending as its caller's context ended
// is given back (blocking.Take's undo): with blocking/keep-late-outcome
// on, it is kept, and the scenario catches it (contexts that end inside
// the job that hands the outcome over: sim.Scenario.InJobEnds).
// Its three hunts need 43, 20 and 294 seeds since the scenario aims a
// restart at a clean-up (aimRestart; 43, 20 and 40 before): 50 more hunts
// from seeds 61,100,000 and 61,400,000 up needed 1 to 207 (median 42;
// 1 to 262, median 40, before), so the bound is 600.
func TestCanaryKeepLateOutcome(t *testing.T) {
	restore := canary.Enable(blocking.BugKeepLateOutcome)
	defer restore()
	_, sc := newBlockingSim()
	sim.Catch(t, sc, string(blocking.BugKeepLateOutcome), 3, 600)
}

// TryAcquire under the blocking face: a TryAcquire that keeps its node
// after ErrBusy, or that takes the lock while another contender is ahead,
// is caught by the scenario (its quiescence, its fencing log).
func TestCanaryTryBlocking(t *testing.T) {
	for _, name := range []canary.Name{bugTryKeepsNode, bugTryHoldsAnywhere} {
		t.Run(string(name), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			_, sc := newBlockingSim()
			sim.Catch(t, sc, string(name), 3, 300)
		})
	}
}

// A Release whose delete an ACL refused, its delete left to go on in the
// background uncounted (the canary), has the Client's next TryAcquire
// fail with ErrBusy behind the Client's own node once the ACL is back:
// the scenario's judge of every ErrBusy catches it (the acl class), once
// the class is aimed at a lone holder's Release and its actor tries
// again at once (aimRelease, the eager rounds). This test's three hunts
// need 61, 21 and 51 seeds since the scenario aims a restart at a
// clean-up (aimRestart; 61, 14 and 18 before), and 50 more from seeds
// 61,100,000 and 61,400,000 up needed 1 to 102 (median 33; 1 to 114,
// median 27, before); 24 more before it, from other seeds (53,000,000 up),
// needed 3 to 86 (median 23): the bound, 300, is the worst seen with a
// margin (three and a half times). Before the aimed fault and the eager
// rounds, six hunts needed 42 to 1,741 seeds (median 637, bound 2000).
func TestCanaryRefusedReleaseUncounted(t *testing.T) {
	if testing.Short() {
		t.Skip("the canary hunts hundreds of seeds of the blocking scenario")
	}
	restore := canary.Enable(bugRefusedReleaseUncounted)
	defer restore()
	_, sc := newBlockingSim()
	sim.Catch(t, sc, string(bugRefusedReleaseUncounted), 3, 300)
}

// lock/keep-last-won: two goroutines of one Client acquire at once, an
// operator deletes the lower contender node, and the goroutine handed
// the lost hold sees its outcome after the other (ActorLag): the Client
// records the lost hold over the live one, and once that loss is known
// a TryAcquire fails with ErrBusy behind the Client's own node (the
// judge of every ErrBusy, which since 2026-12-07 also names a node of a
// hold this Client's other goroutine acquired before the try began).
// With the operator's delete aimed at the lower of two contenders of one
// Client (aimTwins) the hunts need 217, 343 and 201 seeds; without it,
// 217, 2,116 and 1,076; without that judge none caught it in 3,000.
func TestCanaryKeepLastWon(t *testing.T) {
	restore := canary.Enable(bugKeepLastWon)
	defer restore()
	_, sc := newBlockingSim()
	sim.Catch(t, sc, string(bugKeepLastWon), 3, 1500)
}

// The regression seeds of the blocking scenario, in every plain go test
// too.
func TestBlockingSimRegressions(t *testing.T) {
	_, sc := newBlockingSim()
	sim.Regressions(t, sc)
}

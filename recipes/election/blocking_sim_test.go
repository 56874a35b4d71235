package election

// The blocking face under the simulation. In the package itself (not
// election_test) so that its TestSimExplore and TestSimDeterminism run
// beside those of explore_test.go under the names make sim selects.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/task"
)

const (
	bsimDir = "/belect"
	// bsimMaster is the master node of the scenario's Master variant
	// (its leases directory beside it, bsimMaster+LeasesSuffix).
	bsimMaster = bsimDir + "/master"
	bsimLog    = "/bfence"
)

// Where a term's context ends.
const (
	endNone   = iota // it does not
	endBefore        // before Campaign is called
	endDuring        // while Campaign waits (a step or an instant drawn)
	endAfter         // just after Campaign returns leadership
	endInside        // while leading
	endResign        // while Resign runs
	numEnds
)

var endNames = [numEnds]string{"none", "before", "during", "after", "inside", "resign"}

// blockingSim drives an election through its Client from goroutines: 4
// clients, each with a Client and one goroutine. On clients 0 and 2 it
// loops: draw where its context ends (nowhere, before Campaign, during
// it, just after it, while leading, during Resign), Campaign, write
// "enter" and "exit" fenced entries with a sleep between, and Resign
// with the same context, deferred. On clients 1 and 3 it calls Lead with
// Requeue again and again, each call's context ending after a number of
// steps or an instant drawn, each leadership writing the same entries.
//
// Judged as the task-face scenario is: at most one acting leader at any
// simulated instant (sim.Leaders, from the recipe's OnState; the Expire
// class is off, as there: a leader whose session the server expires
// acts until it hears), the fencing log, and liveness: once the faults
// stop, every client leads and writes a term within Recovery (a node
// left by a Resign that did nothing blocks every other candidate while
// its session lives); quiescence: every leadership given back with
// Resign, whatever its context, has its Done closed, and no candidate
// node is left; a candidate node (the master node, for a Master) deleted
// only by its own session, the server or an operator (sim's OwnDeletes).
// And Lead's promise that lead's context is canceled as
// soon as the leadership ends: at the same simulated instant, but for
// clock jumps and pauses (leadCtxEnded). Each call's outcome is judged
// by what its doc promises (sim.Call.Judge): a context's error
// only once the call's context has ended, and of its kind; no
// connection loss or "not sent" but from Fenced (the campaign's and the
// resign's operations are retried past them); no session expiry from
// Resign (a session that ended took the node) or Lead (it campaigns
// again), nor ErrLost from a Master's campaign; never nil from Lead with
// Requeue; and a call whose context had ended before it returns that
// context's error at once.
type blockingSim struct {
	clients  int
	master   bool // the Clients are a Master's (NewMasterClient), not an Election's
	leaders  *sim.Leaders
	resigned []given[*Leadership] // given back, by processes that have not crashed since
	leads    int                  // leaderships of Lead
	// endedAt is when each leadership ended (OnState Ended: its Done
	// closed then), and its process's pauses by then.
	endedAt map[*Leadership]endMark
	prompt  int // leaderships whose end lead's context followed at the same instant
	ended   [numEnds]int
	tried   [numEnds]int
}

func newBlockingSim() (*blockingSim, sim.Scenario) {
	s := &blockingSim{clients: 4}
	return s, s.scenario()
}

// newMasterBlockingSim is the scenario of newBlockingSim over a Master
// (NewMasterClient on bsimMaster): the same terms, Lead calls and
// judges, the operator deleting and writing the master node and the
// leases, and the acl class closing the directory that holds both. Its
// quiescence: no master node, and no lease, left.
func newMasterBlockingSim() (*blockingSim, sim.Scenario) {
	s := &blockingSim{clients: 4, master: true}
	sc := s.scenario()
	sc.Name = "master/blocking"
	sc.Counters = nil // a Master's nodes are not sequential
	// The master node only: a campaign's multi deletes every lease it
	// listed, a deposed master's included (PROTOCOL.md, Master protocol).
	sc.OwnDeletes = []string{bsimMaster}
	// The leases directory is never deleted (PROTOCOL.md, Master
	// protocol): made again, its version restarts, and a former master's
	// late delete of the node, fenced by that version, could remove the
	// node of the master after it (seed 268906578321360 before).
	sc.OperatorSpare = []string{bsimMaster + LeasesSuffix}
	sc.Faults.Allow &^= sim.CounterFaults
	sc.Regressions = []sim.Regression{
		{Seed: 136671956100702, ReconnectLag: true, Canary: string(bugCleanupUnsynced), Why: "liveness: a campaign whose deadline passed after its multi's reply was lost came back through a member that had not applied the multi; its cleanup read no master node there, deleted its lease alone and left the node, of a live session and vouched for by no lease: nobody led until that session ended (the cleanup now reads the node after a sync)"},
	}
	return s, sc
}

// left returns the nodes of the scenario's candidates still there: an
// Election's candidate nodes, or a Master's node and leases.
func (s *blockingSim) left(r *sim.Trial) []string {
	if !s.master {
		return r.Children(bsimDir)
	}
	var out []string
	for _, n := range r.Children(bsimDir) {
		if bsimDir+"/"+n == bsimMaster+LeasesSuffix {
			for _, l := range r.Children(bsimMaster + LeasesSuffix) {
				out = append(out, n+"/"+l)
			}
			continue
		}
		out = append(out, n)
	}
	return out
}

func (s *blockingSim) scenario() sim.Scenario {
	return sim.Scenario{
		Name:       "election/blocking",
		InJobEnds:  true,
		OutageEnds: true,
		Clients:    s.clients,
		Faults:     sim.Faults{Allow: sim.AllFaults&^sim.Of(sim.Expire) | sim.CounterFaults | sim.Of(sim.ACL)},
		Counters:   []string{bsimDir},
		ACL:        []string{bsimDir},
		Duration:   15 * time.Second,
		Regressions: []sim.Regression{
			{Seed: 1743, Why: "liveness, acl class: the cleanup of an attempt whose create reply was lost could not list the closed directory, and its candidate node (an exhausted number) stayed until the session ended (now run again in the background: zkops.Refusable)"},
			{Seed: 13298245248628, Root: sim.ExploreRoot, Why: "liveness, acl class: as seed 1743"},
			{Seed: 2, Why: "liveness, acl class: a Resign whose delete the closed directory refused left the leader's candidate node until its session ended (now sent again in the background: zkops.KeepDeleting)"},
			{Seed: 126305018211054, NoOutageEnds: true, NoCounters: true, NoACL: true, Why: "safety: a process paused past its session's timeout during Lead's backoff; the wait ended with the session and Lead returned task.ErrSessionExpired instead of campaigning again (hidden while the pause's context ends came before the thaw's outcomes)"},
		},
		Setup: func(r *sim.Trial) error {
			s.leaders, s.resigned, s.endedAt = sim.NewLeaders(r.World), nil, map[*Leadership]endMark{}
			// As in the task-face scenario: a leader paused (clock jumps)
			// past the give-up margin is judged by fencing only.
			s.leaders.Margin = time.Duration((1-DefaultGiveUp)*float64(r.Timeout())) - time.Second
			_, err := sim.Run(r.World, 0, task.Create(bsimLog, nil, task.Persistent))
			return err
		},
		Workload: func(r *sim.Trial) {
			for i := range s.clients {
				s.start(r, i)
			}
		},
		Restart: func(r *sim.Trial, i int) {
			s.leaders.End(i)
			s.start(r, i)
		},
		Operator:       []string{bsimDir + "/"},
		OperatorWrites: true,
		// A candidate node is deleted only by its own session: Resign,
		// Lead's end, a campaign's cleanup, its session's end.
		OwnDeletes: []string{bsimDir},
		Quiesce: func(r *sim.Trial) bool {
			if r.Actors() > 0 || len(s.left(r)) > 0 {
				return false
			}
			for _, g := range s.resigned {
				if g.h.Err() == nil && r.Incarnation(g.client) == g.inc {
					return false
				}
			}
			return true
		},
		Invariants: []sim.Invariant{
			sim.Fencing(bsimLog),
			sim.InvariantFunc(func(r *sim.Trial) error {
				for _, g := range s.resigned {
					if g.h.Err() == nil && r.Incarnation(g.client) == g.inc {
						return fmt.Errorf("%s given back with Resign, and its Done never closed", g.h.Path())
					}
				}
				return nil
			}),
		},
	}
}

func (s *blockingSim) start(r *sim.Trial, i int) {
	cfg := []Option{WithData([]byte(strconv.Itoa(i))), WithOnState(func(l *Leadership, st State) {
		switch st {
		case Leading:
			if !slices.Contains(s.leaders.Acting(), i) {
				r.Check(s.leaders.BeginNode(i, l.Path(), l.Token()))
			}
		case Ended:
			s.leaders.End(i)
			s.endedAt[l] = endMark{r.Clock.Now(), r.Incarnation(i), r.Pauses(i)}
		}
	})}
	var c *Client
	var err error
	if s.master {
		c, err = NewMasterClient(r.Execs[i], bsimMaster, cfg...)
	} else {
		c, err = NewClient(r.Execs[i], bsimDir, cfg...)
	}
	if err != nil {
		r.Errorf("client %d: %v", i, err)
		return
	}
	r.Go(i, func(a *sim.Actor) {
		for !r.Stopping() && a.Context().Err() == nil {
			if i%2 == 1 {
				s.lead(r, a, c)
			} else {
				s.term(r, a, c)
			}
		}
	})
}

func (s *blockingSim) term(r *sim.Trial, a *sim.Actor, c *Client) {
	i, rnd := a.Client(), a.Rand()
	end := endNone
	if rnd.IntN(3) > 0 {
		end = 1 + rnd.IntN(numEnds-1)
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
	call := sim.BeginCall(r, a, ctx)
	l, err := c.Campaign(ctx)
	call.Judge("campaign", err, s.campaignRules())
	if err != nil {
		r.Logf("client %d (ctx ends %s): campaign: %v", i, endNames[end], err)
		_ = a.Sleep(a.Context(), time.Duration(rnd.Int64N(int64(300*time.Millisecond))))
		return
	}
	s.ended[end]++
	r.Logf("client %d (ctx ends %s): leads %s", i, endNames[end], l.Path())
	defer func() {
		if end == endResign {
			var rc context.CancelFunc
			ctx, rc = a.CancelAfterSteps(ctx, rnd.IntN(4))
			defer rc()
		}
		call := sim.BeginCall(r, a, ctx)
		err := c.Resign(ctx, l)
		r.Logf("client %d: resign %s: %v", i, l.Path(), err)
		if !a.Killed() {
			s.resigned = append(s.resigned, given[*Leadership]{l, i, r.Incarnation(i)})
		}
		call.Judge("resign", err, giveRules)
	}()
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
	entry := func(kind string) task.MultiOp { return sim.FencedEntry(bsimLog, l.Token(), kind) }
	if !s.fenced(r, a, c, sctx, l, entry("enter")) {
		return
	}
	if err := a.Sleep(sctx, time.Duration(100+rnd.Int64N(900))*time.Millisecond); err != nil {
		return
	}
	if !s.fenced(r, a, c, sctx, l, entry("exit")) {
		return
	}
	r.Progress(i)
}

// lead is one call of Lead with Requeue, its context ending after a
// number of steps or an instant drawn: each leadership writes its
// "enter" and "exit" fenced entries with a sleep between (under the
// leadership's context), and Lead gives it back when lead returns.
func (s *blockingSim) lead(r *sim.Trial, a *sim.Actor, c *Client) {
	i, rnd := a.Client(), a.Rand()
	var ctx context.Context
	var cancel context.CancelFunc
	if rnd.IntN(2) == 0 {
		ctx, cancel = a.CancelAfterSteps(a.Context(), rnd.IntN(300))
	} else {
		ctx, cancel = a.WithTimeout(a.Context(), time.Duration(rnd.Int64N(int64(5*time.Second))))
	}
	defer cancel()
	var led []*Leadership
	call := sim.BeginCall(r, a, ctx)
	err := c.Lead(ctx, LeadOptions{Requeue: true}, func(lctx context.Context, l *Leadership) error {
		led = append(led, l)
		s.leads++
		entry := func(kind string) task.MultiOp { return sim.FencedEntry(bsimLog, l.Token(), kind) }
		defer s.leadCtxEnded(r, a, ctx, lctx, l)
		if !s.fenced(r, a, c, lctx, l, entry("enter")) {
			return nil
		}
		if err := a.Sleep(lctx, time.Duration(100+rnd.Int64N(900))*time.Millisecond); err != nil {
			if len(led)%2 == 0 {
				return err // the context's end, as a lead function often says it
			}
			return nil
		}
		if !s.fenced(r, a, c, lctx, l, entry("exit")) {
			return nil
		}
		r.Progress(i)
		return nil
	})
	r.Logf("client %d: Lead: %v after %d leaderships", i, err, len(led))
	if !a.Killed() {
		for _, l := range led {
			s.resigned = append(s.resigned, given[*Leadership]{l, i, r.Incarnation(i)})
		}
	}
	// Lead with Requeue campaigns again after each leadership, and after
	// each transient failure (an expiry, a lost connection, a lost
	// candidate node: none is returned), until ctx ends: it returns
	// ctx's error, or one another campaign would meet again (an
	// operator's ACL refusing it for a while, the campaign's or the
	// resign's), never nil; lead returning its context's error after a
	// leadership ended is not Lead's ctx ending.
	call.Judge("Lead", err, giveRules)
	switch {
	case err == nil && !r.Closing():
		r.Errorf("client %d: Lead with Requeue returned nil after %d leaderships", i, len(led))
	case errors.Is(err, task.ErrNoAuth):
		// An operator's ACL refuses it for a while: Lead ends on a
		// refusal, and the loop calls it again a little later.
		_ = a.Sleep(a.Context(), time.Duration(rnd.Int64N(int64(300*time.Millisecond))))
	}
}

type endMark struct {
	at          time.Time
	incarnation int
	pauses      int
}

// leadCtxEnded judges Lead's promise that lead's context is canceled as
// soon as the leadership ends. Run as lead returns: if the leadership has
// ended (lead saw its context end, or a fenced write refused), it waits
// for lead's context to end, and then no simulated time has passed since
// the leadership ended but the clock's jumps (time no process ran),
// unless the process was paused meanwhile (frozen, it could not see the
// end) or Lead's own context ended first.
func (s *blockingSim) leadCtxEnded(r *sim.Trial, a *sim.Actor, ctx, lctx context.Context, l *Leadership) {
	i := a.Client()
	if l.Err() == nil || ctx.Err() != nil {
		return
	}
	if err := a.Wait(ctx, lctx.Done()); err != nil || a.Killed() {
		return
	}
	e, ok := s.endedAt[l]
	if !ok {
		r.Errorf("client %d: leadership %s ended (%v) with no Ended reported", i, l.Path(), l.Err())
		return
	}
	if e.incarnation != r.Incarnation(i) || e.pauses != r.Pauses(i) {
		return
	}
	now := r.Clock.Now()
	if late := now.Sub(e.at) - r.Jumped(e.at, now); late > 0 {
		r.Errorf("client %d: lead's context ended %v after its leadership %s ended (%v)", i, late, l.Path(), l.Err())
		return
	}
	s.prompt++
}

// The rules of the Client's calls beyond sim.Call's (sim.Call.Judge):
// every call may end with task.ErrNoAuth, an operator's ACL refusing it
// for a while, and nothing else but these: no connection loss or "not
// sent" unless its rules have them (the campaign's reads, creates and
// deletes, and the resign's delete, are retried past them: PROTOCOL.md),
// and no session expiry from Resign (a session that ended took the node:
// a success) or Lead (it campaigns again). None of them waits before it
// looks at a context that had ended: Campaign, Fenced and Lead submit
// nothing; Resign starts the resign in the background, which the
// scenario's quiescence sees through (Done closed, no candidate node
// left).
//
// campaignMay are the errors Campaign may end with (the task face's:
// Election.Campaign, Master.Campaign, which the Client runs once): the
// session's expiry (the candidate node went with it), and ErrLost, the
// candidate node deleted by someone else (an Election's; a Master's
// campaign never ends with it: campaignRules).
var campaignMay = []error{task.ErrNoAuth, task.ErrSessionExpired, ErrLost}

// fencedRules: the errors Fenced may end with (Leadership.Fenced):
// ErrLost (a refused check, or the leadership known ended), the
// session's expiry, a connection loss or "not sent" (a multi is not
// retried: its outcome is unknown).
var fencedRules = sim.CallRules{May: []error{task.ErrNoAuth, ErrLost, task.ErrSessionExpired, task.ErrConnectionLoss, task.ErrNotSent}}

// giveRules: Resign's and Lead's.
var giveRules = sim.CallRules{May: []error{task.ErrNoAuth}}

// campaignRules are Campaign's. A Master's campaign never ends with
// ErrLost (its protocol goes on after a node or lease it finds not its
// own).
func (s *blockingSim) campaignRules() sim.CallRules {
	if !s.master {
		return sim.CallRules{May: campaignMay}
	}
	return sim.CallRules{May: campaignMay, First: masterLost}
}

func masterLost(err error) (string, bool) {
	if errors.Is(err, ErrLost) {
		return "ErrLost, which a Master's campaign never ends with", true
	}
	return "", false
}

// fenced is one Fenced write of leadership l with ctx, judged; it reports
// whether it was applied.
func (s *blockingSim) fenced(r *sim.Trial, a *sim.Actor, c *Client, ctx context.Context, l *Leadership, op task.MultiOp) bool {
	call := sim.BeginCall(r, a, ctx)
	_, err := c.Fenced(ctx, l, op)
	call.Judge("fenced write", err, fencedRules)
	return err == nil
}

func TestBlockingSimulation(t *testing.T) {
	s, sc := newBlockingSim()
	seeds := 40
	if testing.Short() {
		seeds = 25 // 10 drew no leadership of Lead ended under lead
	}
	if st := sim.Check(t, sc, seeds); st.Failures() > 0 {
		return
	}
	line := ""
	for e := range numEnds {
		line += fmt.Sprintf(" %s=%d/%d", endNames[e], s.ended[e], s.tried[e])
	}
	t.Logf("terms by where the context ended (led/tried):%s; %d leaderships of Lead, %d ended under lead and judged prompt", line, s.leads, s.prompt)
	if s.leads == 0 {
		t.Error("Lead never led: the scenario checks nothing of it")
	}
	if s.prompt == 0 {
		t.Error("no leadership of Lead ended while lead ran: the scenario checks nothing of lead's context")
	}
	for _, e := range []int{endNone, endAfter, endInside, endResign} {
		if s.ended[e] == 0 {
			t.Errorf("no term led with its context ending %s: the scenario checks nothing there", endNames[e])
		}
	}
}

// The Master's blocking face (NewMasterClient) under the same scenario:
// Campaign, Resign and Lead over a Master, judged as over an Election.
func TestMasterBlockingSimulation(t *testing.T) {
	s, sc := newMasterBlockingSim()
	seeds := 40
	if testing.Short() {
		seeds = 25
	}
	if st := sim.Check(t, sc, seeds); st.Failures() > 0 {
		return
	}
	t.Logf("%d leaderships of Lead, %d ended under lead and judged prompt", s.leads, s.prompt)
	if s.leads == 0 {
		t.Error("Lead never led: the scenario checks nothing of it")
	}
}

// The same seed replays the same history, actors included.
func TestSimDeterminism(t *testing.T) {
	_, sc := newBlockingSim()
	sim.Determinism(t, sc, sim.Sample(6, 1000))
	_, sc = newMasterBlockingSim()
	sim.Determinism(t, sc, sim.Sample(6, 1000))
}

// The large run of make sim: SIM_SEEDS seeds (skipped when unset).
func TestSimExplore(t *testing.T) {
	_, sc := newBlockingSim()
	sim.Explore(t, sc)
	_, sc = newMasterBlockingSim()
	sim.Explore(t, sc)
}

// given is a hold given back by client's process inc: judged only while
// that process lives (a crashed process's give-back never completes, and
// its session's end takes the node).
type given[H any] struct {
	h           H
	client, inc int
}

// The canaries master/blocking hunts (a TestCanar* test: make sim runs it,
// without the race detector). election/master-cleanup-unsynced: a
// campaign cut off with its multi applied and its reply lost, its context
// ending in the cut, back through a member that has not applied the multi
// (the lag after an outage's cut, fakezk/sim/outage.go). Without that
// draw no hunt of 8,000 seeds caught it; with it, 67, 1,035 and 2,210
// seeds.
//
// election/lead-context-error-fails: lead returns its context's error
// after the leadership ended (one lead in two of the scenario does), and
// the judge finds Lead ended with a cancellation while its ctx was live.
func TestCanariesBlocking(t *testing.T) {
	t.Run(string(bugCleanupUnsynced), func(t *testing.T) {
		restore := canary.Enable(bugCleanupUnsynced)
		defer restore()
		_, sc := newMasterBlockingSim()
		sim.Catch(t, sc, string(bugCleanupUnsynced), 3, 6000)
	})
	t.Run(string(bugLeadContextErrorFails), func(t *testing.T) {
		restore := canary.Enable(bugLeadContextErrorFails)
		defer restore()
		_, sc := newBlockingSim()
		sim.Catch(t, sc, string(bugLeadContextErrorFails), 3, 300)
	})
}

// The seeds that once failed (Scenario.Regressions), on every run.
func TestBlockingSimRegressions(t *testing.T) {
	_, sc := newBlockingSim()
	_, msc := newMasterBlockingSim()
	sim.Regressions(t, sc, msc)
}

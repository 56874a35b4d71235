package discovery_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/task"
)

const (
	bsimService = "b"
	// bsimShared is the persistent instance id the first bsimSharers
	// processes all register.
	bsimShared  = "s"
	bsimSharers = 2
)

// blockingSim drives discovery through its Client from actors
// (goroutines the world runs in lockstep): each of 3 clients has one
// Client shared by 4 actors: two that loop register, stay a while,
// unregister (instances "c<i>a<k>", Dynamic), one that does the same with
// a Static instance (below), and one that loops start a cache,
// read a few answers with Next, stop. Each round draws its context: one
// that does not end, one ended before the call, or one that ends after a
// few steps or a drawn time (during the call or later); Unregister and
// Stop take that same context. A seed whose plan has the restart class
// has one aimed at its first delete of an instance node (an
// Unregister's, or the undo of a Register whose context ended:
// aimRestart).
//
// On the first bsimSharers clients, the second of those actors
// registers the shared id "s" instead, Static or Permanent as each round
// draws: two processes register and unregister one persistent node.
//
// A third registering actor of each client registers a Static instance
// (a persistent node, "c<i>s") in each round, through a second Client of
// the process on even rounds (both on the same executor: a Register
// through one meets the Unregisters the other has going on in the
// background); once the run stops, it
// registers and unregisters it again with a context that does not end, as
// the doc says to do to be sure the node is gone after a Register whose
// context ended (its create may have been applied).
//
// Judged by: each call's error is one its doc allows it (callRules,
// sim.Call.Judge): its
// context's end only once that context has ended, and of its kind; a
// session's expiry only from a Register or StartCache whose context has
// ended; an ACL's refusal; never a connection loss; a call whose context
// had ended returns its error at once; an Unregister that
// returned nil has ended its registration and deleted its node
// (unregistered); once every actor has ended, no
// instance node is left (an Unregister is carried out whatever its
// context, and a Register that failed leaves no node); Registered
// (sim.Registrations): never true on a session older than its executor's;
// a Static instance Register returned nil for is still there when its
// actor calls Unregister, unless the operator touched it meanwhile (an
// earlier Unregister of either Client, going on in the background after
// its ctx ended, must not delete it); once every actor has ended, no scope
// is left under a client's session; and, from the server's journal
// (sim.Scenario.OwnIncarnations), a process deletes a persistent
// instance node only if one of its sessions made or wrote it (the shared
// id's node, made again by the other process after this one's was gone,
// is never deleted by this one), but in ZooKeeper's window between a
// read and the delete at the version read; and an ephemeral (Dynamic)
// instance node is deleted only by its own session, the server or the
// operator, never by another client's session (sim.Scenario.OwnDeletes).
type blockingSim struct {
	clients    int
	registered int               // rounds that registered, summed over seeds
	statics    int               // Static registrations judged at their Unregister
	reg        sim.Registrations // the instances the actors hold
	quietAt    time.Duration     // when the actors had all ended, no instance node left
	// over counts the calls made with a context ended before them
	// (judged at once), by call; unregsJudged, the Unregisters returning nil
	// judged on the server (unregistered).
	over         [len(callNames)]int
	unregsJudged int
	// r is the seed's Trial; aimed: a restart was aimed at a delete of
	// an instance node (aimRestart), once a seed.
	r     *sim.Trial
	aimed bool
}

// bsimUnaimed are the seeds that replay without the aimed restart
// (aimRestart): the regression seed recorded before it that names a
// canary, the history it was kept for (with it, 871 no longer reaches
// discovery/register-behind-unregister).
var bsimUnaimed = []uint64{871}

// aimRestart aims a server restart at the delete of an instance node
// just sent by client i, once a seed, in a seed whose plan has the
// Restart class (Trial.AimRestart, drawn from Trial.Rand, which nothing
// else in this scenario draws from): the first write of an Unregister,
// or of the undo a Register whose context ended left to the background,
// applied in two restarts of three, its reply lost, and every client
// back at the same instant, so that the delete's retry (a read after a
// sync, then the delete again) races the other clients' Registers of the
// shared id and the process's next Register of its own, where a cut of
// the one client would have it come back after they had acted. A seed
// whose plan lacks the class draws nothing and keeps its history.
func (s *blockingSim) aimRestart(i int) {
	if s.r.FaultsOn() && !slices.Contains(bsimUnaimed, s.r.Seed) {
		s.aimed = s.r.AimRestart(s.r.Rand, i)
	}
}

// leftScopes: once every actor has ended, every registration was given
// Unregister and every cache Stop, whatever their contexts, so no flow
// of theirs is left under a client's session.
func (s *blockingSim) leftScopes(r *sim.Trial) error {
	if r.Actors() > 0 {
		return nil
	}
	for i := range s.clients {
		if n := r.Execs[i].SessionScope().Descendants(); n > 0 {
			return fmt.Errorf("client %d: %d scopes left under its session after every registration was unregistered and every cache stopped", i, n)
		}
	}
	return nil
}

func newBlockingSim() (*blockingSim, sim.Scenario) {
	s := &blockingSim{clients: 3}
	dir := simBase + "/" + bsimService
	return s, sim.Scenario{
		Name:       "discovery/blocking",
		InJobEnds:  true,
		ActorLag:   true,
		OutageEnds: true,
		Clients:    s.clients,
		Faults:     sim.Faults{Allow: sim.AllFaults | sim.Of(sim.ACL), MaxRate: 0.01},
		ACL:        []string{dir},
		Duration:   5 * time.Second,
		Wrap: func(i int, c *fakezk.Conn) task.Conn {
			return sim.AfterSend(c, func(req task.Request) {
				if d, ok := req.(*task.DeleteRequest); ok && !s.aimed && s.r != nil && strings.HasPrefix(d.Path, dir+"/") {
					s.aimRestart(i)
				}
			})
		},
		Setup: func(r *sim.Trial) error {
			s.quietAt = 0
			s.r, s.aimed = r, false
			return nil
		},
		Workload: func(r *sim.Trial) {
			for i := range s.clients {
				s.startClient(r, i)
			}
		},
		Restart:  s.startClient,
		Operator: []string{dir + "/"},
		// A process's Unregister of a persistent instance deletes the
		// node its Register made or kept, never one another process
		// (or the operator) made at the path since.
		OwnIncarnations: staticPaths(s.clients),
		// A Dynamic instance's node is deleted only by its own session
		// (its Unregister, its end), never by another process's: no id
		// here is registered both Dynamic and persistent (a persistent
		// Register deletes another session's Dynamic node of its id, as
		// Curator's does: PROTOCOL.md).
		OwnDeletes: []string{dir},
		Regressions: []sim.Regression{
			{Seed: 251552718802605, NoOutageEnds: true, NoActorLag: true, Why: "liveness (the test's own): a follower's Next waited with a context that never ends after the registering actors had stopped; reads are now bounded"},
			{Seed: 871, Canary: "discovery/register-behind-unregister", Why: "safety: a Register whose ctx ended as it registered a Static instance had its undo (an Unregister) submitted uncounted; the next Register did not wait for it, and its delete, retried after the reconnect, deleted the node that Register had made"},
			{Seed: 583, Why: "safety (the judge's): the operator's clean-up of a node it had created again, which a Static Register had adopted, was not recorded as the operator's (sim.World.OperatedUnder)"},
		},
		Quiesce: func(r *sim.Trial) bool {
			if r.Actors() > 0 || len(r.Children(dir)) > 0 {
				s.quietAt = 0
				return false
			}
			if s.quietAt == 0 {
				s.quietAt = r.Elapsed()
			}
			// Or nothing is left to happen, or 30s of simulated time
			// have passed: the invariant says what is left.
			return s.leftScopes(r) == nil || r.Clock.Pending() == 0 || r.Elapsed()-s.quietAt > 30*time.Second
		},
		Invariants: []sim.Invariant{sim.InvariantFunc(s.reg.Check), sim.InvariantFunc(s.leftScopes)},
	}
}

// staticPaths are the nodes of the persistent instances of the blocking
// scenario's clients: each one's own and the shared one.
func staticPaths(clients int) []string {
	dir := simBase + "/" + bsimService
	ps := []string{dir + "/" + bsimShared}
	for i := range clients {
		ps = append(ps, fmt.Sprintf("%s/c%ds", dir, i))
	}
	return ps
}

// startClient gives client i (its process now) a Client and its actors.
func (s *blockingSim) startClient(r *sim.Trial, i int) {
	c, err := discovery.NewClient(r.Execs[i], simBase)
	if err != nil {
		r.Errorf("client %d: %v", i, err)
		return
	}
	other, err := discovery.NewClient(r.Execs[i], simBase)
	if err != nil {
		r.Errorf("client %d: %v", i, err)
		return
	}
	s.reg.Start(r, i)
	for k := range 2 {
		if k == 1 && i < bsimSharers {
			break // its place is the shared id's actor's (below)
		}
		id := fmt.Sprintf("c%da%d", i, k)
		r.Go(i, func(a *sim.Actor) {
			for !r.Stopping() && a.Context().Err() == nil {
				s.register(r, a, c, id, "")
			}
		})
	}
	static := fmt.Sprintf("c%ds", i)
	r.Go(i, func(a *sim.Actor) {
		for round := 0; !r.Stopping() && a.Context().Err() == nil; round++ {
			cc := c
			if round%2 == 1 {
				cc = other
			}
			s.register(r, a, cc, static, discovery.Static)
		}
		s.cleanUp(r, a, c, static)
	})
	if i < bsimSharers {
		// The id every sharing process registers, Static or Permanent
		// as each round draws.
		r.Go(i, func(a *sim.Actor) {
			for !r.Stopping() && a.Context().Err() == nil {
				typ := discovery.Static
				if a.Rand().IntN(2) == 1 {
					typ = discovery.Permanent
				}
				s.register(r, a, c, bsimShared, typ)
			}
			s.cleanUp(r, a, c, bsimShared)
		})
	}
	r.Go(i, func(a *sim.Actor) {
		for !r.Stopping() && a.Context().Err() == nil {
			s.follow(r, a, c)
		}
	})
}

// cleanUp registers the persistent instance id again and unregisters it,
// with a context that does not end: the last round's Register may have
// left the node (its ctx ended with the create applied).
func (s *blockingSim) cleanUp(r *sim.Trial, a *sim.Actor, c *discovery.Client, id string) {
	for a.Context().Err() == nil {
		call := callRegister
		reg, err := c.Register(a.Context(), discovery.Instance{Name: bsimService, ID: id, Port: 80, ServiceType: discovery.Static})
		if err == nil {
			call = callUnregister
			err = c.Unregister(a.Context(), reg)
		}
		if err == nil {
			return
		}
		if why := sim.BeginCall(r, a, a.Context()).Why(err, callRules[call]); why != "" {
			r.Errorf("client %d: the last clean-up of %s: %s: %v: %s", a.Client(), id, callNames[call], err, why)
			return
		}
		_ = a.Sleep(a.Context(), 100*time.Millisecond)
	}
}

// roundCtx draws a round's context; ends reports whether it may end.
func roundCtx(a *sim.Actor) (ctx context.Context, cancel context.CancelFunc, ends bool) {
	rnd := a.Rand()
	ctx, cancel = a.WithCancel(a.Context())
	switch rnd.IntN(4) {
	case 0:
		return ctx, cancel, false
	case 1:
		cancel()
	case 2:
		var c2 context.CancelFunc
		ctx, c2 = a.CancelAfterSteps(ctx, rnd.IntN(12))
		c1 := cancel
		cancel = func() { c2(); c1() }
	default:
		var c2 context.CancelFunc
		ctx, c2 = a.WithTimeout(ctx, time.Duration(rnd.Int64N(int64(3*time.Second))))
		c1 := cancel
		cancel = func() { c2(); c1() }
	}
	return ctx, cancel, true
}

// The Client's calls, for callRules.
const (
	callRegister = iota
	callUnregister
	callStartCache
	callNext
	callStop
)

var callNames = [...]string{"register", "unregister", "start cache", "cache next", "stop cache"}

// callRules are the rules of the Client's calls beyond sim.Call's
// (sim.Call.Judge, the Client doc): task.ErrSessionExpired from a
// Register or a StartCache once its context has ended (until then they
// run again on the next session), never from the others (an Unregister
// of a Dynamic instance on a session that ended has nothing left to
// delete, a Static one's is run again on the next session, and a
// cache's Next waits on as the cache follows the next session); an
// operator's ACL refusing a Register, an Unregister (its delete goes on
// in the background) or a cache's read (StartCache; Next returns the
// cache's Err once that refusal ended it: cacheNextRules), never a Stop.
// Never a connection loss or "not sent", nor task.ErrClosed while the
// world runs: every operation is retried past them. With a context that
// had ended, Register and StartCache submit nothing; Unregister and Stop
// start theirs in the background.
var callRules = [...]sim.CallRules{
	callRegister:   {May: []error{task.ErrNoAuth}, Expiry: sim.ExpiryOnceEnded},
	callUnregister: {May: []error{task.ErrNoAuth}, Expiry: sim.ExpiryNever},
	callStartCache: {May: []error{task.ErrNoAuth}, Expiry: sim.ExpiryOnceEnded},
	callNext:       {Expiry: sim.ExpiryNever}, // and cacheNextRules
	callStop:       {Expiry: sim.ExpiryNever},
}

// cacheNextRules are the rules of a Next of cache cc: an error only once
// cc has ended, its Err, by an ACL's refusal.
func cacheNextRules(cc *discovery.Cache) sim.CallRules {
	rules := callRules[callNext]
	rules.Also = sim.EndedWith("cache", cc.Err, task.ErrNoAuth)
	return rules
}

// judge judges the outcome err of a Client call (as it began) made by
// actor a, counting those made with a context that had ended.
func (s *blockingSim) judge(c sim.Call, call int, what string, err error, rules sim.CallRules) {
	if c.Judge(callNames[call]+" "+what, err, rules) {
		s.over[call]++
	}
}

// register is one register, stay, unregister of actor a as instance id
// of type typ ("" for Dynamic).
func (s *blockingSim) register(r *sim.Trial, a *sim.Actor, c *discovery.Client, id string, typ discovery.ServiceType) {
	i, rnd := a.Client(), a.Rand()
	ctx, cancel, _ := roundCtx(a)
	defer cancel()
	inc := r.Incarnation(i)
	inst := discovery.Instance{Name: bsimService, ID: id, Port: 80, ServiceType: typ}
	// The node of a process's own persistent id is its registrations'
	// alone; the shared one another process may unregister meanwhile.
	static := typ != "" && id != bsimShared
	calledAt := r.Clock.Now() // the operator may delete the node from its create on
	call := sim.BeginCall(r, a, ctx)
	reg, err := c.Register(ctx, inst)
	s.judge(call, callRegister, id, err, callRules[callRegister])
	if err != nil {
		_ = a.Sleep(a.Context(), time.Duration(rnd.Int64N(int64(300*time.Millisecond))))
		return
	}
	s.registered++
	if _, dynamic := discovery.RegistrationSession(reg); dynamic {
		s.reg.Hold(r, i, inc, sim.Registered{Name: id, Registered: reg.Registered, Done: reg.Done(), Session: func() task.Session {
			sess, _ := discovery.RegistrationSession(reg)
			return sess
		}})
	}
	_ = a.Sleep(ctx, time.Duration(rnd.Int64N(int64(time.Second))))
	if static && r.Incarnation(i) == inc {
		path := simBase + "/" + bsimService + "/" + id
		if _, ok := r.NodeStat(path); !ok && !r.OperatedUnder(path, calledAt, r.Clock.Now()) {
			r.Errorf("client %d: the Static instance %s Register (called at %s) returned nil for is gone at its Unregister, the operator not having touched it",
				i, id, calledAt.Sub(fakezk.Epoch))
		}
		s.statics++
	}
	call = sim.BeginCall(r, a, ctx)
	err = c.Unregister(ctx, reg)
	s.reg.Drop(r, i, inc, id)
	s.judge(call, callUnregister, id, err, callRules[callUnregister])
	if err == nil && !a.Killed() && r.Incarnation(i) == inc {
		s.unregistered(r, i, reg)
	}
	if err == nil {
		r.Progress(i) // a whole round: liveness once the faults stop
	}
}

// unregistered judges client i's registration reg after Unregister
// returned nil (Registration.Unregister, Err): the registration has
// ended (Done closed, Err ErrUnregistered, or why it ended before: an
// ACL's refusal), and its node is gone: a Dynamic instance's node of the
// client's current session (each Dynamic id is one actor's, which
// registers it once at a time), a persistent one's incarnation that
// Register made or kept (another made at the path since may be there).
func (s *blockingSim) unregistered(r *sim.Trial, i int, reg *discovery.Registration) {
	if r.Closing() {
		return // (the executor stopped: the session went, and its nodes)
	}
	s.unregsJudged++
	path := reg.Path()
	select {
	case <-reg.Done():
		if e := reg.Err(); !errors.Is(e, discovery.ErrUnregistered) && !errors.Is(e, task.ErrNoAuth) {
			r.Errorf("client %d: Unregister of %s returned nil, and the registration ended with %v", i, path, e)
		}
	default:
		r.Errorf("client %d: Unregister of %s returned nil, and the registration's Done is not closed", i, path)
	}
	st, ok := r.NodeStat(path)
	if !ok {
		return
	}
	if _, dynamic := discovery.RegistrationSession(reg); dynamic {
		if st.EphemeralOwner == r.Conns[i].SessionID() {
			r.Errorf("client %d: Unregister of %s returned nil, and a node of its session (czxid %#x) is still there", i, path, st.Czxid)
		}
	} else if st.Czxid == discovery.RegistrationCzxid(reg) {
		r.Errorf("client %d: Unregister of %s returned nil, and the node its Register made or kept (czxid %#x) is still there", i, path, st.Czxid)
	}
}

// follow is one cache started, read a few times, stopped.
func (s *blockingSim) follow(r *sim.Trial, a *sim.Actor, c *discovery.Client) {
	rnd := a.Rand()
	ctx, cancel, _ := roundCtx(a)
	defer cancel()
	call := sim.BeginCall(r, a, ctx)
	sc, err := c.StartCache(ctx, bsimService)
	s.judge(call, callStartCache, bsimService, err, callRules[callStartCache])
	if err != nil {
		_ = a.Sleep(a.Context(), time.Duration(rnd.Int64N(int64(300*time.Millisecond))))
		return
	}
	for range rnd.IntN(4) {
		// Each read waits at most 2s: once the registering actors have
		// stopped, nothing changes any more.
		nctx, ncancel := a.WithTimeout(ctx, 2*time.Second)
		call := sim.BeginCall(r, a, nctx)
		_, err := sc.Next(nctx)
		s.judge(call, callNext, bsimService, err, cacheNextRules(sc.Cache())) // (before ncancel ends nctx)
		ncancel()
		if err != nil {
			break
		}
	}
	call = sim.BeginCall(r, a, ctx)
	err = sc.Stop(ctx)
	s.judge(call, callStop, bsimService, err, callRules[callStop])
}

// The seeds that ever failed, replayed in every plain go test.
func TestSimRegressions(t *testing.T) {
	_, bs := newBlockingSim()
	sim.Regressions(t, bs)
}

func TestBlockingSimulation(t *testing.T) {
	s, sc := newBlockingSim()
	st := sim.Check(t, sc, simSeeds()/2)
	t.Logf("%d rounds registered (%d Static ones judged at their Unregister); Registered judged true %d times, %d expiries heard with registrations held; calls made with their context ended (register, unregister, start cache, next, stop cache): %v; %d Unregisters returning nil judged on the server", s.registered, s.statics, s.reg.Seen, s.reg.Expiries, s.over, s.unregsJudged)
	if st.Failures() == 0 && (s.registered == 0 || s.statics == 0 || s.reg.Seen == 0 || s.reg.Expiries == 0) {
		t.Fatal("no round registered, no Static one judged, or Registered never judged at an expiry: the test checks nothing")
	}
	if st.Failures() == 0 && (s.over[callRegister] == 0 || s.over[callUnregister] == 0 || s.over[callStartCache] == 0 || s.over[callStop] == 0 || s.unregsJudged == 0) {
		t.Fatal("no Register, Unregister, StartCache or Stop made with its context ended, or no Unregister judged on the server: the judge checks nothing there")
	}
}

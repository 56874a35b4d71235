package cache

// The blocking face under the simulation: the cache's Client (Start,
// Next, Current, Done, Err, Stop) driven from actors, with contexts that
// end at every point. Its TestSimExplore, TestSimDeterminism and
// TestSimRegressions are those of sim_test.go, which run both scenarios.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// Where a round's context ends.
const (
	bendNone   = iota // it does not
	bendBefore        // before Start is called
	bendStart         // while Start waits (a step or an instant drawn)
	bendAfter         // just after Start returns
	bendInside        // while the Nexts run (a step drawn)
	bendGive          // while Stop runs
	numBends
)

var bendNames = [numBends]string{"none", "before", "start", "after", "inside", "give"}

// The kinds of cache an actor's round follows.
const (
	kindChildren = iota // simDir's children, with data
	kindTree            // all of /cache, with data
	kindNode            // simNode
	numKinds
)

var kindNames = [numKinds]string{"children", "tree", "node"}

// blockingCacheSim drives the caches through their blocking Client from
// actors: clients 0 and 1 each run two actors that loop rounds: make a
// Client of a kind drawn (a ChildrenCache of simDir with data, a
// TreeCache of /cache with data, a NodeCache of simNode), Start, a few
// Next, Stop. Each round draws where its context ends (nowhere, before
// Start, during it, just after, while the Nexts run, during Stop), and
// each Next of a round takes a context of its own made from the round's,
// drawn to end:
//
//   - at a step drawn in 0..12 (one Next in four), while the writer
//     writes;
//   - inside the job of the executor that reads the next change, or the
//     one that makes the cache quiescent and hands the next snapshot over
//     (one in four; World.Interrupt, from OnEvent or OnSynced): the
//     caller looks before the job has handed the difference over, as a
//     goroutine racing the executor may, and cancels its flow, which the
//     job then completes all the same, so the Client must hand that
//     difference back (canary cache/next-lost-on-cancel); or, if no
//     change comes, at an instant drawn in 0..2s;
//   - at an instant drawn in 0..2s (the others).
//
// One round in three, a second goroutine of the client reads the same
// Client with Nexts of its own (contexts ending at a step or an instant
// drawn) until the round ends; both merge what they read into the
// round's model, each node's newest state kept (sharedReads).
//
// Client 2 writes as the cache scenario's writers do (cacheSim.write),
// under all three fault classes and the counter classes, at the cache
// scenario's rate.
//
// Judged by:
//
//   - every difference Next returns is consistent with the snapshot the
//     round's model holds, built only from the differences Next returned
//     (applyChange), and the model plus the difference is the snapshot
//     Next reports: a Next that returned an error lost nothing;
//   - a round still going when the writer stops reads on until nothing
//     changes for a second, then its model, the Client's Current and the
//     server's nodes (sim.Subtree; the Stat fields the package doc
//     promises) must be the same (within 30s of simulated time); with
//     two readers, a difference lost between them leaves the model
//     behind (canary cache/next-lost-beside-another);
//   - each call's error is one the Client's doc allows it (sim.Call): its
//     context's end only once that context has ended, and of its kind;
//     an ACL's refusal from a Start, and from a Next only as the cache's
//     own Err (no cache ends otherwise while it runs); nothing else from
//     a Stop; never a session's expiry or a connection loss; a Start or
//     Stop whose context had ended returns its error at once,
//     and the cache of a Start that failed ends;
//   - quiescence: every Client given Stop, whatever its context, has
//     Done closed and Err ErrStopped (unless its process crashed since),
//     and once every actor has ended no scope is left under a reader's
//     session (a stopped cache leaves nothing under its session).
//
// A reader process that crashes starts its actors again, with new
// Clients and fresh models; the writer starts its loop again.
type blockingCacheSim struct {
	w       *cacheSim // its write loop and writer count
	stopped []stoppedClient
	failed  []failedStart
	hist    serverHistory // the server's nodes over time: each Next's snapshot is judged against it
	quietAt time.Duration // when the writer and the actors had all ended
	// counted over seeds
	started     [numBends]int // rounds that started, by where their context ended
	tried       [numBends]int
	kinds       [numKinds]int // rounds started, by kind
	nexts       int           // differences read
	ctxNext     int           // Nexts that returned their context's error
	interrupted int           // Next contexts ended inside a job of the executor
	settled     int           // rounds judged against the server once the writer stopped
	lossy       int           // of those, rounds with a Next that returned an error
	shared      int           // rounds whose Client a second goroutine read
	sharedNexts int           // differences the second goroutines read
	// Starts and Stops called with a context ended before them (judged
	// at once),
	// and failed Starts whose cache was judged ended.
	startedOver, stoppedOver, failedJudged int
}

// failedStart is the cache a Start of client's process inc made and
// failed to start: judged only while that process lives.
type failedStart struct {
	e           *engine
	client, inc int
}

// stoppedClient is a Client given Stop by client's process inc: judged
// only while that process lives.
type stoppedClient struct {
	c           *Client
	client, inc int
}

const (
	bsimReaders = 2 // clients 0 and 1 read; client 2 writes
	bsimWriter  = 2
)

func newBlockingCacheSim() (*blockingCacheSim, sim.Scenario) {
	s := &blockingCacheSim{w: &cacheSim{noAuthOK: true}}
	over := func(r *sim.Trial) error {
		for _, g := range s.stopped {
			if r.Incarnation(g.client) != g.inc {
				continue
			}
			if !closed(g.c.Done()) {
				return fmt.Errorf("client %d: a cache given Stop never ended (Done)", g.client)
			}
			// ErrStopped, or what ended the cache before its Stop came:
			// under this scenario's faults, only an ACL's refusal does.
			if err := g.c.Err(); !errors.Is(err, ErrStopped) && !errors.Is(err, task.ErrNoAuth) {
				return fmt.Errorf("client %d: a cache given Stop ended with %v", g.client, err)
			}
		}
		// A Start that failed stopped the cache it made (Client.Start),
		// or the error that failed it ended it.
		for _, f := range s.failed {
			if r.Incarnation(f.client) == f.inc && !closed(f.e.done) {
				return fmt.Errorf("client %d: a Start that failed left its cache running", f.client)
			}
		}
		// A stopped cache leaves nothing under its session (doc,
		// Errors): once every actor has ended, every Client it made was
		// given Stop, so no flow of theirs is left on the readers.
		if r.Actors() == 0 {
			for i := range bsimReaders {
				if n := r.Execs[i].SessionScope().Descendants(); n > 0 {
					return fmt.Errorf("client %d: %d scopes left under its session after every cache was given Stop", i, n)
				}
			}
		}
		return nil
	}
	return s, sim.Scenario{
		Name:       "cache/blocking",
		InJobEnds:  true,
		OutageEnds: true,
		ActorLag:   true,
		Regressions: []sim.Regression{
			{Seed: 154053573062005, NoACL: true, Why: "the harness's: clock jumps drawn at each server step fired the executors' re-reads of watched nodes, whose requests made more steps and more jumps, so one World.Drive never returned and the fault phase ran an hour of simulated time (faults now stop at the phase's end, even inside a step)"},
			{Seed: 91391882352184, NoACL: true, Root: sim.ExploreRoot, Canary: string(bugNextLostBesideAnother), Why: "two Nexts of one Client, both given back: the later-served one's hand-back put its whole earlier snapshot back, undoing the earlier one's path-by-path hand-back, so the tree's root, Added to the first and handed back, stood as reported and never was"},
			{Seed: 256177260515968, NoACL: true, NoOutageEnds: true, NoActorLag: true, Root: sim.ExploreRoot, NoOperatorWrites: true, Canary: string(bugNoRelistSaturated), Why: "a TreeCache's listing of a directory whose counter had run out was applied and its reply queued as the session was suspended; the reconnect's relist of the saturated directories came before that reply was handled, so the directory was not yet known saturated and not listed again, and two children created while the session was away (no Pzxid moved: the watch set again fired nothing) never reached the cache: its Stat stayed at 5 children against the server's 7"},
		},
		Clients:  3,
		Faults:   sim.Faults{Allow: sim.AllFaults | sim.CounterFaults | sim.Of(sim.ACL), MaxRate: 0.05},
		Counters: []string{"/cache", simDir, simAdd},
		ACL:      []string{"/cache"},
		Duration: 10 * time.Second,
		Server:   fakezk.Config{Journal: s.hist.Journal},
		Setup: func(r *sim.Trial) error {
			s.hist.reset(r.World)
			s.stopped, s.failed, s.quietAt = nil, nil, 0
			_, err := sim.Run(r.World, bsimWriter, c.Seq(task.Create("/cache", nil, task.Persistent),
				c.Seq(task.Create(simDir, nil, task.Persistent), task.Create(simAdd, nil, task.Persistent))))
			return err
		},
		Workload: func(r *sim.Trial) {
			for i := range bsimReaders {
				s.startReader(r, i)
			}
			s.w.writers = 1
			s.w.write(r, bsimWriter)
		},
		Restart: func(r *sim.Trial, i int) {
			if i == bsimWriter {
				s.w.write(r, i)
				return
			}
			s.startReader(r, i)
		},
		Operator:       []string{"/cache/"},
		OperatorWrites: true,
		Live: func(r *sim.Trial) bool {
			return r.ProgressedSinceFaults(0) && r.ProgressedSinceFaults(1) && r.ProgressedSinceFaults(bsimWriter)
		},
		Quiesce: func(r *sim.Trial) bool {
			if s.w.writers > 0 || r.Actors() > 0 {
				s.quietAt = 0
				return false
			}
			if s.quietAt == 0 {
				s.quietAt = r.Elapsed()
			}
			// Or nothing is left to happen, or 30s of simulated time
			// have passed: the invariant says what is wrong.
			return over(r) == nil || r.Clock.Pending() == 0 || r.Elapsed()-s.quietAt > 30*time.Second
		},
		Invariants: []sim.Invariant{sim.InvariantFunc(over)},
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// startReader gives reader client i (its process now) its two actors.
func (s *blockingCacheSim) startReader(r *sim.Trial, i int) {
	for range 2 {
		r.Go(i, func(a *sim.Actor) {
			for !r.Stopping() && a.Context().Err() == nil {
				s.round(r, a)
			}
		})
	}
}

// drawEnd draws where a round's context ends and makes that context; the
// caller ends it with the cancel it returns.
func drawEnd(a *sim.Actor) (int, context.Context, context.CancelFunc) {
	rnd := a.Rand()
	end := bendNone
	if rnd.IntN(3) > 0 {
		end = 1 + rnd.IntN(numBends-1)
	}
	ctx, cancel := a.WithCancel(a.Context())
	switch end {
	case bendBefore:
		cancel()
	case bendStart:
		var c2 context.CancelFunc
		if rnd.IntN(2) == 0 {
			ctx, c2 = a.CancelAfterSteps(ctx, rnd.IntN(12))
		} else {
			ctx, c2 = a.WithTimeout(ctx, time.Duration(rnd.Int64N(int64(time.Second))))
		}
		c1 := cancel
		cancel = func() { c2(); c1() }
	}
	return end, ctx, cancel
}

// The rules of the Client's calls beyond sim.Call's (sim.Call.Judge, the
// Client doc, the package doc's Errors): from Start, the end of the cache
// it started (an operator's ACL refusing it a read: task.ErrNoAuth); from
// Next, the cache's own Err once it has ended (by such a refusal: Stop
// comes after the round's Nexts: nextRules); from Stop, nothing else.
// Never a session's expiry (Start waits on for the cache's first
// snapshot on the next session, Next for the next difference) nor a
// connection loss or "not sent" (retried after the reconnect). With a
// context that had ended, Start submits nothing and stops the cache it
// made, and Stop starts the stop in the background; Next hands over a
// difference ready whatever its context, and is judged by its error
// alone.
var (
	startRules = sim.CallRules{May: []error{task.ErrNoAuth}, Expiry: sim.ExpiryNever, ExpiryWhy: waitsPast}
	stopRules  = sim.CallRules{Expiry: sim.ExpiryNever, ExpiryWhy: waitsPast}
)

const waitsPast = "it waits on past it: the cache follows the next session"

// nextRules are the rules of a Next of cl: an error only once its cache
// has ended, its Err, by an ACL's refusal.
func nextRules(cl *Client) sim.CallRules {
	return sim.CallRules{Expiry: sim.ExpiryNever, ExpiryWhy: waitsPast, Also: sim.EndedWith("cache", cl.Err, task.ErrNoAuth)}
}

// race is a Next's context armed to end inside a job of the cache's
// executor: at the next OnEvent (a change read) or OnSynced (the job
// that makes the cache quiescent and hands the snapshot over).
type race struct {
	armed, onSynced bool
	a               *sim.Actor
	cancel          context.CancelFunc
	fired           *int
}

// fire ends the armed context from inside the job (World.Interrupt):
// the actor looks before the job ends.
func (rc *race) fire(r *sim.Trial, synced bool) {
	if !rc.armed || rc.onSynced != synced {
		return
	}
	rc.armed = false
	*rc.fired++
	r.Interrupt(rc.a, rc.cancel)
}

// newKind makes a Client of the kind on executor of client i, with rc's
// hooks.
func newKind(r *sim.Trial, i, kind int, rc *race) (*Client, error) {
	ex := r.Execs[i]
	hooks := []Option{WithOnEvent(func(Event) { rc.fire(r, false) }), WithOnSynced(func() { rc.fire(r, true) })}
	switch kind {
	case kindChildren:
		return NewChildrenClient(ex, simDir, append(hooks, WithData())...)
	case kindTree:
		return NewTreeClient(ex, "/cache", append(hooks, WithData())...)
	}
	return NewNodeClient(ex, simNode, hooks...)
}

// round is one Start, a few Next, Stop of actor a on a new Client.
func (s *blockingCacheSim) round(r *sim.Trial, a *sim.Actor) {
	i, rnd := a.Client(), a.Rand()
	kind := rnd.IntN(numKinds)
	end, ctx, cancel := drawEnd(a)
	defer cancel()
	s.tried[end]++
	rc := &race{a: a, fired: &s.interrupted}
	cl, err := newKind(r, i, kind, rc)
	if err != nil {
		r.Errorf("client %d: %v", i, err)
		return
	}
	// The cache Start makes, to judge that a Start that failed leaves
	// it ended (Client.Start: the cache is stopped).
	var made *engine
	mk := cl.mk
	cl.mk = func() (*engine, func() []Node) {
		e, cur := mk()
		made = e
		return e, cur
	}
	call := sim.BeginCall(r, a, ctx)
	err = cl.Start(ctx)
	if call.Judge("start "+kindNames[kind], err, startRules) {
		s.startedOver++
	}
	if err != nil {
		r.Logf("client %d actor %d (ctx ends %s): start %s: %v", i, a.ID(), bendNames[end], kindNames[kind], err)
		if made != nil && !a.Killed() {
			s.failed = append(s.failed, failedStart{made, i, r.Incarnation(i)})
			s.failedJudged++
		}
		_ = a.Sleep(a.Context(), time.Duration(rnd.Int64N(int64(300*time.Millisecond))))
		return
	}
	s.started[end]++
	s.kinds[kind]++
	r.Progress(i)
	defer func() {
		if end == bendGive {
			var gc context.CancelFunc
			ctx, gc = a.CancelAfterSteps(ctx, rnd.IntN(4))
			defer gc()
		}
		call := sim.BeginCall(r, a, ctx)
		err := cl.Stop(ctx)
		r.Logf("client %d actor %d: stop %s: %v", i, a.ID(), kindNames[kind], err)
		if !a.Killed() {
			s.stopped = append(s.stopped, stoppedClient{cl, i, r.Incarnation(i)})
		}
		if call.Judge("stop "+kindNames[kind], err, stopRules) {
			s.stoppedOver++
		}
	}()
	switch end {
	case bendAfter:
		cancel()
	case bendInside:
		var ic context.CancelFunc
		ctx, ic = a.CancelAfterSteps(ctx, rnd.IntN(40))
		defer ic()
	}
	model := map[string]Node{}
	j := newSnapJudge(&s.hist, r, kindNames[kind], a.Client())
	lossy := false // a Next returned an error
	// One round in three, a second goroutine reads the same Client.
	var sh *sharedReads
	if rnd.IntN(3) == 0 {
		sh = &sharedReads{model: model, tomb: map[string]Node{}, done: make(chan struct{})}
		s.shared++
		r.Go(i, func(b *sim.Actor) {
			defer close(sh.done)
			s.sharedReader(r, b, cl, kind, sh)
		})
		defer func() { // before Stop: the second reader ends first
			sh.stop = true
			if a.Wait(a.Context(), sh.done) != nil {
				return
			}
			if err := sh.judge(a, cl); err != nil {
				r.Errorf("client %d: %s cache read by two goroutines: %v", i, kindNames[kind], err)
			}
		}()
	}
	var settleFrom time.Duration
	for k, n := 0, 1+rnd.IntN(8); (k < n || r.Stopping()) && ctx.Err() == nil; k++ {
		settling := r.Stopping()
		if settling && settleFrom == 0 {
			settleFrom = r.Elapsed()
		}
		var nctx context.Context
		var nc context.CancelFunc
		switch d := rnd.IntN(4); {
		case settling:
			nctx, nc = a.WithTimeout(ctx, time.Second)
		case d == 0:
			nctx, nc = a.CancelAfterSteps(ctx, rnd.IntN(13))
		case d == 1:
			// Ends inside a job of the executor, as the cache reads a
			// change or hands a snapshot over.
			// Also at an instant drawn in 0..2s, if no change comes.
			tctx, tc := a.WithTimeout(ctx, time.Duration(rnd.Int64N(int64(2*time.Second))))
			var ic context.CancelFunc
			nctx, ic = a.WithCancel(tctx)
			nc = func() { ic(); tc() }
			rc.armed, rc.onSynced, rc.cancel = true, rnd.IntN(2) == 0, ic
		default:
			nctx, nc = a.WithTimeout(ctx, time.Duration(rnd.Int64N(int64(2*time.Second))))
		}
		call := sim.BeginCall(r, a, nctx)
		ch, err := cl.Next(nctx)
		rc.armed = false
		why := call.Why(err, nextRules(cl)) // (before nc ends nctx)
		nc()
		if err != nil {
			lossy = true
			if why != "" {
				r.Errorf("client %d: next %s: %v: %s", i, kindNames[kind], err, why)
				return
			}
			if errors.Is(err, task.ErrNoAuth) {
				return // the cache ended with it: the round is over
			}
			if errors.Is(err, task.ErrCanceled) || errors.Is(err, task.ErrDeadlineExceeded) {
				s.ctxNext++
			}
			if settling && ctx.Err() == nil && errors.Is(err, task.ErrDeadlineExceeded) {
				// Nothing changed for a second: judge, or read on.
				diff := s.settledDiff(r, cl, kind, model, sh != nil)
				if diff == nil || r.Elapsed()-settleFrom > 30*time.Second {
					if diff != nil {
						r.Errorf("client %d: %s cache, 30s after the writer stopped: %v", i, kindNames[kind], diff)
					}
					s.settled++
					if lossy {
						s.lossy++
					}
					return
				}
			}
			continue
		}
		s.nexts++
		r.Progress(i)
		if sh != nil {
			sh.merge(ch)
		} else if err := applyChange(model, ch); err != nil {
			r.Errorf("client %d: %s cache: %v", i, kindNames[kind], err)
			return
		}
		if err := j.check(ch.Nodes); err != nil {
			r.Errorf("client %d: %s cache: %v", i, kindNames[kind], err)
			return
		}
	}
}

// sharedReads is the model of a round whose Client two goroutines read:
// each merges what its Nexts return, and since a difference one reader
// was handed as its context ended is reported again to whichever Next
// comes next, as the node stands then, the merge keeps each node's
// newest state reported (its Stat only grows), with removals kept as
// tombstones. Once the writer stops, the model must hold the server's
// nodes: a difference lost between the two readers leaves it behind.
type sharedReads struct {
	model map[string]Node
	tomb  map[string]Node // the newest removal reported, by path
	stop  bool            // the round is over: the second reader ends
	done  chan struct{}   // closed when it has
}

// judge compares, once both readers are done, the model with the
// snapshot the cache last served, its hand-backs applied: a difference
// given back is owed to the next Next, not lost, so what the model lacks
// the cache must count as not reported yet.
func (sh *sharedReads) judge(a *sim.Actor, cl *Client) error {
	e, _ := cl.started()
	// The hand-backs the readers submitted run before this.
	if _, err := executor.Await(a.Context(), a.Exec(), task.Func(func(*task.Scope) (task.Unit, error) {
		return task.Unit{}, nil
	})); err != nil || e.Err() != nil {
		return nil // the process or the cache ended: nothing to compare
	}
	for p, n := range e.seen {
		m, ok := sh.model[p]
		switch {
		case !ok:
			return fmt.Errorf("%s: served (czxid %d version %d), never reported", p, n.Stat.Czxid, n.Stat.Version)
		case newer(n.Stat, m.Stat) || newer(m.Stat, n.Stat) || m.Stat.Mzxid == n.Stat.Mzxid && !bytes.Equal(m.Data, n.Data):
			// Two states of one age (a child created in a directory
			// whose counter ran out moves no zxid) cannot be ordered:
			// either may be the last reported.
			return fmt.Errorf("%s: reported Stat %+v, served %+v", p, m.Stat, n.Stat)
		}
	}
	for p := range sh.model {
		if _, ok := e.seen[p]; !ok {
			return fmt.Errorf("%s: reported, not in the snapshot served", p)
		}
	}
	return nil
}

// tiesAsServed returns model with each node whose state is of the same
// age as want's, and so cannot be ordered against it (sharedReads.judge),
// taken as want's.
func tiesAsServed(model, want map[string]Node) map[string]Node {
	out := maps.Clone(model)
	for p, m := range model {
		if n, ok := want[p]; ok && !newer(n.Stat, m.Stat) && !newer(m.Stat, n.Stat) && bytes.Equal(m.Data, n.Data) {
			out[p] = n
		}
	}
	return out
}

// newer reports whether Stat a is a later state of a node than b.
func newer(a, b task.Stat) bool {
	if a.Czxid != b.Czxid {
		return a.Czxid > b.Czxid
	}
	if x, y := max(a.Mzxid, a.Pzxid), max(b.Mzxid, b.Pzxid); x != y {
		return x > y
	}
	return a.Aversion > b.Aversion
}

func (sh *sharedReads) merge(ch Change) {
	for _, ev := range ch.Events() {
		old, in := sh.model[ev.Path]
		if ev.Type == Removed {
			if in && !newer(old.Stat, ev.Prev.Stat) {
				delete(sh.model, ev.Path)
			}
			if t, ok := sh.tomb[ev.Path]; !ok || newer(ev.Prev.Stat, t.Stat) {
				sh.tomb[ev.Path] = ev.Prev
			}
			continue
		}
		if in && newer(old.Stat, ev.Node.Stat) {
			continue // older than what the model holds (a tie is taken: a
			// create in a directory whose counter ran out moves no zxid)
		}
		if t, ok := sh.tomb[ev.Path]; !in && ok && !newer(ev.Node.Stat, t.Stat) {
			continue // reported before the removal already merged
		}
		sh.model[ev.Path] = ev.Node
	}
}

// sharedReader is the second goroutine of a shared round: Nexts on the
// round's Client with contexts of its own (a step drawn, an instant
// drawn) until the round is over or the world stops.
func (s *blockingCacheSim) sharedReader(r *sim.Trial, b *sim.Actor, cl *Client, kind int, sh *sharedReads) {
	rnd := b.Rand()
	j := newSnapJudge(&s.hist, r, kindNames[kind], b.Client())
	for !sh.stop && !r.Stopping() && b.Context().Err() == nil {
		var nctx context.Context
		var nc context.CancelFunc
		if rnd.IntN(2) == 0 {
			nctx, nc = b.CancelAfterSteps(b.Context(), rnd.IntN(13))
		} else {
			nctx, nc = b.WithTimeout(b.Context(), time.Duration(rnd.Int64N(int64(2*time.Second))))
		}
		call := sim.BeginCall(r, b, nctx)
		ch, err := cl.Next(nctx)
		why := call.Why(err, nextRules(cl)) // (before nc ends nctx)
		nc()
		if err != nil {
			if why != "" {
				r.Errorf("client %d: second reader: next %s: %v: %s", b.Client(), kindNames[kind], err, why)
				return
			}
			if errors.Is(err, task.ErrNoAuth) {
				return // the cache ended with it
			}
			continue
		}
		s.sharedNexts++
		sh.merge(ch)
		if err := j.check(ch.Nodes); err != nil {
			r.Errorf("client %d: second reader: %s cache: %v", b.Client(), kindNames[kind], err)
			return
		}
	}
}

// settledDiff compares the round's model (built from what Next returned)
// and the Client's Current with the server's nodes the kind follows.
func (s *blockingCacheSim) settledDiff(r *sim.Trial, cl *Client, kind int, model map[string]Node, shared bool) error {
	if s.w.writers > 0 {
		return fmt.Errorf("the writer still writes")
	}
	want := map[string]Node{}
	for p, sn := range sim.Subtree(r.World, "/cache", simPaths) {
		n := Node{Path: p, Data: sn.Data, Stat: sn.Stat}
		switch {
		case kind == kindTree, kind == kindNode && p == simNode, kind == kindChildren && task.Parent(p) == simDir:
			want[p] = n
		}
	}
	cur := map[string]Node{}
	for _, n := range cl.Current() {
		cur[n.Path] = n
	}
	whole := kind == kindTree
	for _, cmp := range []struct {
		what string
		got  map[string]Node
	}{{"Current", cur}, {"the model built from Next", model}} {
		w := want
		if whole {
			w = counterJumped(cmp.got, want)
		}
		got := cmp.got
		if shared && cmp.what != "Current" {
			got = tiesAsServed(got, w)
		}
		if err := sameNodes(got, w, whole); err != nil {
			return fmt.Errorf("%s differs from the server: %w", cmp.what, err)
		}
	}
	return nil
}

func (s *blockingCacheSim) report(t *testing.T) {
	t.Helper()
	line := ""
	for e := range numBends {
		line += fmt.Sprintf(" %s=%d/%d", bendNames[e], s.started[e], s.tried[e])
	}
	t.Logf("rounds by where the context ended (started/tried):%s; by kind %v; %d differences read, %d Nexts ended by their context, %d ended inside a job; %d rounds judged against the server once the writer stopped, %d of them after a Next that failed; %d rounds read by two goroutines, %d differences read by the second; %d Starts and %d Stops called with their context ended, %d failed Starts judged to leave their cache ended",
		line, s.kinds, s.nexts, s.ctxNext, s.interrupted, s.settled, s.lossy, s.shared, s.sharedNexts, s.startedOver, s.stoppedOver, s.failedJudged)
}

func TestBlockingSimulation(t *testing.T) {
	s, sc := newBlockingCacheSim()
	seeds := 60
	if testing.Short() {
		seeds = 15
	}
	if st := sim.Check(t, sc, seeds); st.Failures() > 0 {
		return
	}
	s.report(t)
	for e := range numBends {
		if e != bendBefore && s.started[e] == 0 {
			t.Errorf("no round started with its context ending %s: the scenario checks nothing there", bendNames[e])
		}
	}
	for k := range numKinds {
		if s.kinds[k] == 0 {
			t.Errorf("no %s round started", kindNames[k])
		}
	}
	if s.nexts == 0 || s.ctxNext == 0 || s.interrupted == 0 || s.lossy == 0 || len(s.stopped) == 0 || s.sharedNexts == 0 ||
		s.startedOver == 0 || s.stoppedOver == 0 || s.failedJudged == 0 {
		t.Error("no difference read, no Next ended by its context, no round judged after a failed Next, no Client stopped, no difference read by a second goroutine, no Start or Stop called with its context ended, or no failed Start judged: the scenario checks nothing there")
	}
}

package sim

import (
	"context"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/chunk"
	"github.com/zkflow/zkflow/internal/park"
)

// Actors: user goroutines that call blocking APIs (executor.Await, the
// recipes' Clients) inside the simulated world, in lockstep with it.
//
// An actor runs only when the world hands it the turn, and the world does
// not step while an actor has it: the turn passes back when the actor is
// about to block in a select the world can make ready (internal/park:
// Await, the Clients' waits, Actor.Sleep and Actor.Wait) or returns. At
// the start of each Step the world runs, one at a time and in the order
// they were started, every actor whose wait would now return (a flow's
// outcome delivered by a continuation, a channel closed), until none is
// left; then it ends the contexts whose step has come
// (Actor.CancelAfterSteps) or whose deadline has passed (WithTimeout: the
// timer only marks it) and runs those actors too. A context the world
// ends ends only there, and outcomes are delivered only by the
// executors' steps, so an actor never wakes with both its outcome and its
// context's end ready: no random choice of a select shows.
//
// The actors of a client whose process is paused do not run until it
// thaws; those of a client whose process crashes die with it (World.Crash):
// their contexts end and they unwind (a panic the actor's top recovers:
// their deferred calls run, and each wait they reach ends them again), as
// do all actors when the world closes.
//
// An actor is a coroutine (iter.Pull): handing the turn over is a direct
// switch between the world's goroutine and the actor's, not a channel
// send that wakes another thread.

// Actor is a goroutine the world runs in lockstep (World.Go). Its methods
// are for the actor's own goroutine, while it has the turn.
type Actor struct {
	w      *World
	id     int
	client int
	inc    int // the client's incarnation it belongs to
	fn     func(a *Actor)
	rand   *rand.Rand
	root   *actorCtx
	next   func() (struct{}, bool) // resumes the actor until it parks or returns
	yield  func(struct{}) bool     // hands the turn back (the actor's side)
	state  actorState
	ready  func() bool // while parked: whether its wait would return
	// lagDrawn says the lag of this wait's wake-up is drawn; the actor
	// runs from step lagUntil, or once lagTimer has fired if it is
	// set (Config.ActorLag). lagWait numbers the waits.
	lagDrawn bool
	lagUntil uint64
	lagTimer bool
	lagWait  uint64
	killed   bool
	// Sleep on the actor's own contexts: whether the timer fired, the
	// context, and the timer's callback and the wait's predicate.
	slept      bool
	sleepCtx   context.Context
	sleepFire  func()
	sleepReady func() bool
	panic      any // what fn panicked with, and where
	stack      []byte
}

type actorState uint8

const (
	actorStarting actorState = iota // not run yet
	actorRunning                    // has the turn
	actorParked                     // waiting, ready says for what
	actorDone                       // returned, or unwound
)

// actors is the world's set of actors.
type actors struct {
	live    []*Actor
	next    int    // actor ids
	steps   uint64 // Steps taken while actors lived
	cancels []stepCancel
	inJob   []jobCancel
	cuts    []outageCut // contexts waiting for their ContextOutage (outage.go)
	outage  []outageCut // contexts cut off, waiting for their client to see it
	after   []afterCut  // clients to cut again at a request after an outage ended a context
	// spare is the rest of the chunk child cuts contexts from: one
	// object per ctxChunk contexts (a chunk lives while one of its
	// contexts is referred to; none is ever used twice). The actors
	// and the world take turns: one of them at a time makes contexts.
	spare chunk.Of[actorCtx]
	// due is a buffer fireStepCancels lends itself (nil while lent: a
	// context's end that steps the world again makes its own), so that
	// ending contexts at a step does not allocate a list each time.
	due []stepCancel
}

// ctxChunk is how many contexts child allocates at once.
const ctxChunk = 16

// inJobSteps is how many more steps than drawn a context that waits for
// a job waits at most (CancelAfterSteps).
const inJobSteps = 64

// jobCancel is a context the world ends inside a job of its actor's
// executor that ends a flow, after skip more such jobs
// (Config.InJobEnds).
type jobCancel struct {
	ctx  *actorCtx
	skip int
}

type stepCancel struct {
	at  uint64
	ctx *actorCtx
	err error // context.Canceled, or DeadlineExceeded
	// outage: the context ends in its ContextOutage (outage.go), and the
	// requests its call's clean-up sends may be cut too (aftermath).
	outage bool
}

// Go starts fn as an actor of client i: a goroutine that may call the
// blocking APIs on w.Execs[i] (and block on the clock with Sleep, on a
// channel with Wait), run in lockstep with the world. It first runs at
// the world's next Step. fn must pass a.Context(), or a context derived
// from it with the Actor's With... methods or context.WithCancel, to
// every blocking call (a call given another context would block the
// world), and return once that context has ended. Go is called on the
// world's goroutine (a workload, a continuation) or by an actor.
func (w *World) Go(i int, fn func(a *Actor)) *Actor {
	park.Enable()
	if w.act == nil {
		w.act = &actors{}
	}
	s := w.act
	a := &Actor{w: w, id: s.next, client: i, fn: fn,
		rand: rand.New(rand.NewPCG(w.Seed, 0x4143_544f_5200_0000+uint64(s.next)))}
	if i < len(w.procs) {
		a.inc = w.procs[i].incarnation
	}
	a.root = &actorCtx{a: a}
	s.next++
	s.live = append(s.live, a)
	a.next, _ = iter.Pull(func(yield func(struct{}) bool) {
		a.yield = yield
		a.main()
	})
	return a
}

// errKilled unwinds an actor whose process crashed (parker.Wait).
type errKilled struct{}

func (a *Actor) main() {
	defer func() {
		if p := recover(); p != nil && p != (errKilled{}) {
			a.panic, a.stack = p, debug.Stack()
		}
		a.state = actorDone
	}()
	if a.killed {
		return
	}
	a.fn(a)
}

// Actors returns how many actors have not returned.
func (w *World) Actors() int {
	if w.act == nil {
		return 0
	}
	n := 0
	for _, a := range w.act.live {
		if a.state != actorDone {
			n++
		}
	}
	return n
}

// resume gives a the turn and waits until it parks or ends.
func (s *actors) resume(a *Actor) {
	a.state = actorRunning
	a.ready = nil
	a.lagDrawn, a.lagUntil, a.lagTimer = false, 0, false
	a.lagWait++
	a.next()
	if a.panic != nil {
		panic(fmt.Sprintf("sim: actor %d of client %d panicked: %v\n%s", a.id, a.client, a.panic, a.stack))
	}
}

// paused reports whether a's process is paused.
func (w *World) paused(a *Actor) bool {
	return a.client < len(w.procs) && w.procs[a.client].paused
}

// held reports whether a's contexts must wait: its process is paused, or
// thawed since this step began (its executor has not run yet: the
// outcomes the thaw delivers come first).
func (w *World) held(a *Actor) bool {
	return w.paused(a) || a.client < len(w.procs) && w.act.steps <= w.procs[a.client].thawed || w.lagging(a)
}

// lagging reports whether a could run, its wait being ready, but wakes
// late (Config.ActorLag): its contexts wait for it to have run, since
// one ended now would be found ended together with what made it ready.
func (w *World) lagging(a *Actor) bool {
	return a.state == actorParked && a.lagDrawn && w.act.steps < a.lagUntil
}

// lagReady reports whether parked actor a, its wait ready, may run now,
// drawing the lag of this wake-up the first time it is asked.
func (w *World) lagReady(a *Actor) bool {
	if w.lag == nil || a.killed {
		return true
	}
	if !a.lagDrawn {
		a.lagDrawn = true
		switch w.lag.IntN(8) {
		case 0: // late by steps: the executors and the server go on
			a.lagUntil = w.act.steps + 1 + uint64(w.lag.IntN(8))
		case 1: // late by time: the clock goes on too
			a.lagUntil, a.lagTimer = math.MaxUint64, true
			wait := a.lagWait
			w.Clock.AfterFunc(time.Duration(1+w.lag.IntN(200))*time.Millisecond, func() {
				if a.lagWait == wait {
					a.lagUntil = 0
				}
			})
		}
	}
	return w.act.steps >= a.lagUntil
}

// runnable reports whether the world should give a the turn now.
func (w *World) runnable(a *Actor) bool {
	switch {
	case a.state != actorStarting && a.state != actorParked:
		return false
	case a.killed:
		return true
	case a.client < len(w.procs) && w.procs[a.client].paused:
		return false
	}
	return a.state == actorStarting || a.ready() && w.lagReady(a)
}

// stepActors runs the actors that can run (Step calls it first) and
// returns how many turns it gave.
func (w *World) stepActors() int {
	s := w.act
	if s == nil || len(s.live) == 0 {
		return 0
	}
	s.steps++
	n := 0
	for {
		n += w.runRunnable()
		if !w.fireStepCancels(false) {
			break
		}
	}
	s.compact()
	return n
}

// idleActors is stepActors for a world with nothing else to run: a
// context waiting for a later step ends now.
func (w *World) idleActors() int {
	if w.act == nil {
		return 0
	}
	if n := w.endLags(); n > 0 {
		return n // the world waited for late actors only
	}
	if len(w.act.cancels)+len(w.act.inJob) == 0 {
		return 0
	}
	// The contexts waiting for a job wait across instants (a call waits
	// for a later instant's outcome); once the clock has nothing left to
	// fire, no job is coming, and they end now, as those waiting for a
	// step.
	s := w.act
	keep := s.inJob[:0]
	for _, c := range s.inJob {
		switch {
		case c.ctx.ended.Load():
		case w.paused(c.ctx.a) || w.Clock.Pending() > 0:
			keep = append(keep, c)
		default:
			s.cancels = append(s.cancels, stepCancel{at: s.steps, ctx: c.ctx, err: context.Canceled})
		}
	}
	clear(s.inJob[len(keep):])
	s.inJob = keep
	if len(s.cancels) == 0 {
		return 0
	}
	if !w.fireStepCancels(true) {
		return 0 // only contexts of paused processes: they wait for the thaw
	}
	return 1 + w.runRunnable()
}

// endLags runs the actors that wake late (Config.ActorLag) now, as a
// world with nothing else to run at this instant does, but for those
// late by time while the clock has a timer to fire; it returns the turns
// it gave.
func (w *World) endLags() int {
	late := false
	for _, a := range w.act.live {
		if w.lagging(a) && (!a.lagTimer || w.Clock.Pending() == 0) {
			a.lagUntil, late = 0, true
		}
	}
	if !late {
		return 0
	}
	return w.runRunnable()
}

func (w *World) runRunnable() int {
	s := w.act
	n := 0
	for ran := true; ran; {
		ran = false
		for i := 0; i < len(s.live); i++ { // Go from an actor appends
			if a := s.live[i]; w.runnable(a) {
				s.resume(a)
				n++
				ran = true
			}
		}
	}
	return n
}

// fireStepCancels ends the contexts whose step has come (the earliest one
// at least, if early), in the order they were made; it reports whether
// it ended any. The contexts of a paused process's actors wait for the
// thaw and for its executor's first step after it: ended while the
// process is paused, a context would be found ended together with an
// outcome the thaw delivers, and the actor's select would choose between
// them at random (a seed would not replay). A world with nothing else to
// run (early) waits only for the thaw.
func (w *World) fireStepCancels(early bool) bool {
	s := w.act
	if len(s.cancels) == 0 {
		return false
	}
	if early {
		first, any := uint64(0), false
		for _, c := range s.cancels {
			if !w.paused(c.ctx.a) && (!any || c.at < first) {
				first, any = c.at, true
			}
		}
		if !any {
			return false
		}
		s.steps = max(s.steps, first)
	}
	due := s.due[:0]
	s.due = nil
	keep := s.cancels[:0]
	for _, c := range s.cancels {
		if c.at <= s.steps && !(early && w.paused(c.ctx.a) || !early && w.held(c.ctx.a)) {
			due = append(due, c)
		} else {
			keep = append(keep, c)
		}
	}
	clear(s.cancels[len(keep):])
	s.cancels = keep
	for _, c := range due {
		if c.outage {
			w.aftermathOf(c.ctx)
		}
		c.ctx.cancel(c.err)
	}
	n := len(due)
	if cap(due) > cap(s.due) {
		clear(due)
		s.due = due[:0]
	}
	return n > 0
}

func (s *actors) compact() {
	j := 0
	for _, a := range s.live {
		if a.state != actorDone {
			s.live[j] = a
			j++
		}
	}
	clear(s.live[j:])
	s.live = s.live[:j]
}

// killActors ends the actors of client i (every actor if i < 0): their
// contexts end and each unwinds, one at a time, until it has returned.
func (w *World) killActors(i int) {
	s := w.act
	if s == nil {
		return
	}
	for _, a := range s.live {
		if a.state == actorDone || (i >= 0 && a.client != i) {
			continue
		}
		a.killed = true
		a.root.cancel(context.Canceled)
		if a.state == actorStarting || a.state == actorParked {
			s.resume(a)
		}
	}
	s.compact()
}

// Interrupt ends a context of actor a with cancel (one its With...
// methods returned) and, if a waits and may run now, gives it the turn at
// once, until it waits again or returns. Called from inside a job of an
// executor (a recipe's hook, a continuation), it is a caller whose
// context ends while the executor runs that job, as a goroutine of a
// real program may: the caller looks before the job ends, finds no
// outcome the job has yet to deliver, and what it does then (cancel its
// flow, submit another) is queued behind the job, which goes on, however
// the executor orders its queues. The ordinary contexts never end there:
// the world ends them between its steps, when every job has ended, so a
// caller's cancel always comes before the jobs still queued. Call it on
// the world's goroutine, never from an actor.
func (w *World) Interrupt(a *Actor, cancel context.CancelFunc) {
	if a.w == w && w.lagging(a) { // it runs first, late as it was: its wait returns what made it ready
		a.lagUntil = 0
		w.act.resume(a)
	}
	cancel()
	if a.w != w || a.state != actorParked || a.killed {
		return
	}
	a.lagDrawn, a.lagUntil, a.lagTimer = true, 0, false // it looks now, inside the job
	if !w.runnable(a) {
		a.lagDrawn = false
		return
	}
	w.act.resume(a)
}

// parker is an Actor as its contexts' park.Parker.
type parker Actor

// Wait implements park.Parker: the actor hands the turn back until ready
// holds (and the world gives it the turn again).
func (p *parker) Wait(ready func() bool) {
	a := (*Actor)(p)
	if a.killed {
		panic(errKilled{})
	}
	a.ready = ready
	a.state = actorParked
	a.yield(struct{}{})
	if a.killed {
		panic(errKilled{})
	}
}

// Go implements park.Parker: f runs as another actor of the same client.
func (p *parker) Go(f func(park.Parker)) {
	p.w.Go(p.client, func(b *Actor) { f((*parker)(b)) })
}

// ID is the actor's number, in the order the world started them.
func (a *Actor) ID() int { return a.id }

// Client is the client the actor runs on.
func (a *Actor) Client() int { return a.client }

// Exec is the executor of the actor's client (its process's).
func (a *Actor) Exec() *executor.Executor { return a.w.Execs[a.client] }

// World is the world the actor runs in.
func (a *Actor) World() *World { return a.w }

// Rand is the actor's randomness, drawn from the world's seed and the
// actor's number.
func (a *Actor) Rand() *rand.Rand { return a.rand }

// Context is the actor's context: it ends when the actor's process
// crashes or the world closes.
func (a *Actor) Context() context.Context { return a.root }

// Killed reports whether the actor is unwinding because its process
// crashed or the world closed.
func (a *Actor) Killed() bool { return a.killed }

// Sleep waits d of simulated time, or until ctx ends (its error then).
func (a *Actor) Sleep(ctx context.Context, d time.Duration) error {
	if park.From(ctx) == park.Parker((*parker)(a)) {
		return a.sleep(ctx, d)
	}
	// A context of another actor (park.Go's): a sleep of its own.
	fired := make(chan struct{})
	t := a.w.Clock.AfterFunc(d, func() { close(fired) })
	park.Wait(ctx, func() bool { return park.Closed(fired) || ctx.Err() != nil })
	if err := ctx.Err(); err != nil {
		t.Stop()
		return err
	}
	return nil
}

// sleep is Sleep on a's own context, with the actor's timer callback and
// wait predicate, made once (an actor sleeps once at a time): no channel
// and no closure per Sleep.
func (a *Actor) sleep(ctx context.Context, d time.Duration) error {
	if a.sleepFire == nil {
		a.sleepFire = func() { a.slept = true }
		a.sleepReady = func() bool { return a.slept || a.sleepCtx.Err() != nil }
	}
	a.slept, a.sleepCtx = false, ctx
	t := a.w.Clock.AfterFunc(d, a.sleepFire)
	park.Wait(ctx, a.sleepReady)
	a.sleepCtx = nil
	if err := ctx.Err(); err != nil {
		t.Stop()
		return err
	}
	return nil
}

// Wait waits until ch is closed, or until ctx ends (its error then). ch
// must be a channel that is only closed, never sent on (a Done channel).
func (a *Actor) Wait(ctx context.Context, ch <-chan struct{}) error {
	park.Wait(ctx, func() bool { return park.Closed(ch) || ctx.Err() != nil })
	if park.Closed(ch) {
		return nil
	}
	return ctx.Err()
}

// Receive waits for a value on ch and returns it with ok true, or ok
// false once ch is closed, or ctx's error if ctx ends first: the receive
// of a blocking face's channel (one that sends values, as election's
// Client.Observe does) by actor a, in the world's lockstep. A value
// received is always returned, even if ctx has ended by then.
func Receive[T any](ctx context.Context, a *Actor, ch <-chan T) (v T, ok bool, err error) {
	got := false
	try := func() bool {
		if !got {
			select {
			case v, ok = <-ch:
				got = true
			default:
			}
		}
		return got
	}
	// The world calls ready only when it gives the actor the turn if it
	// holds, so a value taken by it is the actor's.
	(*parker)(a).Wait(func() bool { return try() || ctx.Err() != nil })
	if try() {
		return v, ok, nil
	}
	return v, false, ctx.Err()
}

// WithCancel returns a context that ends when parent does or cancel is
// called. parent is the actor's context or one its With... methods made.
func (a *Actor) WithCancel(parent context.Context) (context.Context, context.CancelFunc) {
	c := a.child(parent)
	return c, func() { c.cancel(context.Canceled) }
}

// WithTimeout returns a context that ends when parent does, when cancel
// is called, or d of simulated time from now (context.DeadlineExceeded).
func (a *Actor) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	c := a.child(parent)
	c.deadline = a.w.Clock.Now().Add(d)
	// Ended at the start of the next step, not in the timer: a timer may
	// fire inside a step (a clock jump), after the executors delivered
	// an outcome the actor has not seen yet.
	s := a.w.act
	t := a.w.Clock.AfterFunc(d, func() {
		s.cancels = append(s.cancels, stepCancel{at: s.steps, ctx: c, err: context.DeadlineExceeded})
	})
	return c, func() { t.Stop(); c.cancel(context.Canceled) }
}

// CancelAfterSteps returns a context that the world ends (canceled) at
// its k-th Step from now (k 0: at the next): a context that ends at a
// point of the protocol rather than at an instant, since many steps run
// at one instant of the clock. A world with nothing else to run ends it
// at once.
//
// In a world with Config.InJobEnds, one context in three (drawn from a
// stream of the world's own, so the seed's other draws stay as they were)
// ends instead inside a job of the actor's executor: the job that ends a
// flow (the (k mod 3)+1-th from now), before that flow hands its outcome
// over, and the actor gets the turn there (World.Interrupt). That is a
// caller whose context ends while the executor runs: it finds no outcome
// yet, and what it does then comes after the job, which delivers the
// outcome to no one waiting. Such a context waits for its job across
// instants of the clock, inJobSteps steps more than it would have: a call
// that waits for what never comes ends then, as it would have (later).
// A world with nothing left to run, now or on the clock, ends it at once.
//
// In a world with Config.OutageEnds, one context in three (drawn from a
// stream of its own, before the draw above, which it then replaces) ends
// in an outage instead (ContextOutage): the world cuts the actor's client
// off just after the client sends its n-th request from now (n drawn
// below 8: one of the requests of the call the context is made for), and
// the context ends 0 to 2 steps after the client's executor sees the
// loss. Outside the faults phase it ends as if drawn for a step; with
// no cut within a session timeout (no request sent), it ends then.
func (a *Actor) CancelAfterSteps(parent context.Context, k int) (context.Context, context.CancelFunc) {
	c := a.child(parent)
	s := a.w.act
	if a.w.outage != nil && a.w.outage.IntN(3) == 0 {
		return c, a.w.cutLater(c)
	}
	at := s.steps + 1 + uint64(max(k, 0))
	if a.w.inJob != nil && a.w.inJob.IntN(3) == 0 {
		s.inJob = append(s.inJob, jobCancel{ctx: c, skip: max(k, 0) % 3})
		at += inJobSteps // unless no flow of its client ends by then
	}
	s.cancels = append(s.cancels, stepCancel{at: at, ctx: c, err: context.Canceled})
	return c, func() { c.cancel(context.Canceled) }
}

// flowEnded is the Observer.OnFlowEnd of client i's executor (Config.InJobEnds):
// inside the job that ends a flow, before its outcome is handed over, it
// ends the contexts of client i's actors whose job has come and gives
// each actor the turn.
func (w *World) flowEnded(i int) {
	s := w.act
	if s == nil || len(s.inJob) == 0 {
		return
	}
	var due []*actorCtx
	keep := s.inJob[:0]
	for _, c := range s.inJob {
		switch {
		case c.ctx.ended.Load(): // ended some other way
		case c.ctx.a.client != i, w.lagging(c.ctx.a): // a late actor's context waits for it
			keep = append(keep, c)
		case c.skip > 0:
			c.skip--
			keep = append(keep, c)
		default:
			due = append(due, c.ctx)
		}
	}
	clear(s.inJob[len(keep):])
	s.inJob = keep
	for _, c := range due {
		w.Interrupt(c.a, func() { c.cancel(context.Canceled) })
	}
}

func (a *Actor) child(parent context.Context) *actorCtx {
	p, ok := parent.(*actorCtx)
	if !ok || p.a.w != a.w {
		panic("sim: an actor's contexts derive from its Context or from what its With... methods made")
	}
	s := a.w.act
	c := s.spare.New(ctxChunk)
	c.a, c.parent, c.deadline = a, p, p.deadline
	p.addChild(c)
	return c
}

// actorCtx is an actor's context: its deadlines are on the simulated clock,
// and the world ends it on its own goroutine (or the actor does, calling
// cancel), so that contexts derived from it with context.WithCancel end
// at once and in order, with no goroutine of the context package. It
// carries the actor's park.Parker.
type actorCtx struct {
	a        *Actor
	parent   *actorCtx
	deadline time.Time

	mu        sync.Mutex
	done      chan struct{} // made by the first Done (most contexts are only asked Err)
	err       error
	ended     atomic.Bool // err is set: Err, asked at every step by the waits, locks only then
	afters    []afterFn   // what runs when c ends, in the order it came
	nextAfter uint64      // afterFn ids
}

// afterFn is what runs when an actorCtx ends: f (an AfterFunc's, known by its
// id to its stop), or a child actorCtx to end with the actorCtx's error. A child
// takes a value in the list, no closure: actors make contexts at every
// blocking call.
type afterFn struct {
	id    uint64
	f     func()
	child *actorCtx
}

// Deadline implements context.Context.
func (c *actorCtx) Deadline() (time.Time, bool) { return c.deadline, !c.deadline.IsZero() }

// Done implements context.Context.
func (c *actorCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	return c.done
}

// Err implements context.Context.
func (c *actorCtx) Err() error {
	if !c.ended.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value implements context.Context: the actor for park.Key.
func (c *actorCtx) Value(key any) any {
	if key == park.Key {
		return (*parker)(c.a)
	}
	return nil
}

// AfterFunc is what the context package calls to end a context derived
// from c (context.WithCancel) when c ends: f runs at once, on the
// goroutine that ends c.
func (c *actorCtx) AfterFunc(f func()) (stop func() bool) { return c.afterFunc(f) }

func (c *actorCtx) afterFunc(f func()) func() bool {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		f()
		return func() bool { return false }
	}
	c.nextAfter++
	id := c.nextAfter
	c.afters = append(c.afters, afterFn{id: id, f: f})
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.afters {
			if x.child == nil && x.id == id {
				c.afters = slices.Delete(c.afters, i, i+1)
				return true
			}
		}
		return false
	}
}

// addChild makes child end, with c's error, when c ends (at once if c
// has ended).
func (c *actorCtx) addChild(child *actorCtx) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		child.cancel(c.Err())
		return
	}
	if len(c.afters) == cap(c.afters) {
		// Before the list grows, the children that have ended leave it
		// (ending them again would do nothing): an actor's context
		// outlives the many its calls make.
		c.afters = slices.DeleteFunc(c.afters, func(af afterFn) bool { return af.child != nil && af.child.ended.Load() })
	}
	c.afters = append(c.afters, afterFn{child: child})
	c.mu.Unlock()
}

func (c *actorCtx) cancel(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	c.ended.Store(true)
	if c.done != nil {
		close(c.done)
	}
	afters := c.afters
	c.afters = nil
	c.mu.Unlock()
	for _, af := range afters {
		if af.child != nil {
			af.child.cancel(c.Err())
		} else {
			af.f()
		}
	}
}

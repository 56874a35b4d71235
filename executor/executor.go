package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkflow/zkflow/internal/chunk"
	"github.com/zkflow/zkflow/internal/reqcheck"
	"github.com/zkflow/zkflow/task"
)

// Config configures an Executor. The zero Config is valid: no connection
// (operations fail with task.ErrClosed, nothing pauses), the wall clock, a
// random seed, errors of detached flows logged with slog.
type Config struct {
	// Conn is the ZooKeeper connection whose session the executor follows.
	// The executor calls Conn.Start on its first Step and Conn.Close when it
	// stops.
	Conn task.Conn
	// Clock is the time source. Nil means the Conn's clock when the Conn
	// has a method Clock() task.Clock (a fakezk.Conn has: its server's),
	// so that a simulated server and its executor cannot run on different
	// clocks by omission; otherwise the wall clock, task.RealClock().
	Clock task.Clock
	// Seed seeds the source behind Scope.Rand (retry jitter, ...); 0 picks
	// a random seed. Simulations set it.
	Seed uint64
	// OnError receives the errors of flows nobody waits for: deferred
	// cleanups, forks without a handler, and what the recipes' blocking
	// Clients give back (a release, a resign) after their caller stopped
	// waiting. It runs on the executor goroutine and must not block. nil
	// logs them with slog.Default().
	OnError func(error)
	// OnSession receives every session event after the executor has applied
	// it, before the subscribers (task.Runtime.Subscribe) do; also the
	// Expired it infers from a new session id and the Closed of Close and
	// Shutdown. When the event ends a session, it runs before any
	// continuation of the ended flows. It runs on the executor goroutine
	// and must not block.
	OnSession func(task.Event, task.Session)
	// Observer, if not nil, is told of flows, operations, session
	// transitions, retries and queue depths as they happen (task.Observer
	// says on which goroutine each callback runs). Nil costs one pointer
	// check where each fact is learnt and allocates nothing.
	Observer *task.Observer
	// Logger receives the executor's log records, each with the session
	// id as attribute "session" ("0x..."): the errors of detached flows at
	// Warn when OnError is nil; at Debug, session transitions and, when
	// the logger is enabled for Debug as New runs, every operation's
	// outcome (attributes "op", "path", "session", "flow", "latency",
	// and "err" when it failed), made where Observer.OnOpEnd would be.
	// Nil means slog.Default(), whose level (Info) keeps the Debug
	// records out: quiet unless asked.
	Logger *slog.Logger
	// WatchRecheck is how long a flow waits on a watch's notification
	// before it reads the watched node again (task.Watch: ZooKeeper
	// withholds the notifications of a node a session may no longer
	// READ, after an operator's setAcl, and the wait would never end): 0
	// means task.RecheckAfter, twice the session's timeout; a negative
	// value turns the re-reads off (a wait behind such a node then lasts
	// until the session ends).
	WatchRecheck time.Duration
	// NoSyncAfterReconnect turns off the sync the executor sends ahead
	// of every request after a reconnect (the package documentation,
	// "After a reconnect"). A flow then settles a write whose reply was
	// lost with a sync of its own before its read (task/FLOWS.md), as the
	// recipes do; the simulation turns it off to hold them to that.
	NoSyncAfterReconnect bool
}

// Executor runs every step of every flow on one goroutine. See the package
// documentation for its queues and guarantees.
type Executor struct {
	frames // the task package's state: its trampoline, the task.Flow bodies alive

	conn  task.Conn
	clock task.Clock
	// The clock as a firingClock and a bgFiringClock, if it is one
	// (looked at once, in New); nil otherwise.
	fclock   firingClock
	bgfclock bgFiringClock
	onError  func(error)
	onSess   func(task.Event, task.Session)
	obs      *task.Observer // nil, or every field set (Observer.Filled): what the executor tells
	userObs  *task.Observer // Config.Observer, Filled: what Observer returns (obs may wrap it to log)
	log      *slog.Logger
	rng      *rand.Rand

	// Shared with other goroutines.
	mu          sync.Mutex
	inboxClosed bool
	inbox       []item
	inboxResps  []task.Response // the responses of the inbox's outcome items, in order
	inboxEvs    []task.Event    // the events of its notification items, in order
	spare       []item
	spareResps  []task.Response
	spareEvs    []task.Event
	refusing    bool            // Close or the stop has begun: Submit is refused
	runCtx      context.Context // Run's ctx, once Run drives: its end refuses Submit too
	pending     atomic.Int32
	afterPost   func()      // tests only: called by postFlow between posting and waking Run
	beforeShut  func()      // tests only: called by Shutdown (no Run) before it runs the shutdown
	stopped     atomic.Bool // the shutdown has begun
	running     atomic.Bool // a Run has started (it is set for good)
	closeReq    atomic.Bool
	wake        chan struct{}
	done        chan struct{} // closed when the shutdown is over, or Run ended in a panic
	finish      sync.Once     // closes done

	// sendMu is the send gate: Send holds it from its last look at
	// closeReq until Conn.Do has returned, and Close takes it once after
	// setting closeReq, so that no request reaches the connection after
	// Close has returned. Not mu: a Conn may call done (postOutcome, which
	// takes mu) before Do returns.
	sendMu sync.Mutex

	// Executor goroutine only.
	down      bool              // the shutdown has begun (stopped, for this goroutine)
	shutCut   bool              // the shutdown cut looping flows off (drainShutdown)
	shutPhase int               // the shutdown's next phase (shutdownPhases)
	driving   bool              // counted in drivers (misuse.go)
	inJob     bool              // a job of e is under way (runJob): Step and its kin run none
	stopCtxs  []context.Context // Run's ctx and CloseWhenDone's: their end stops the executor
	stopErr   error             // what Run returns: the error of the ctx that stopped it
	cur       job               // the job Step is running
	curResp   task.Response     // its response, for an outcome
	curEv     task.Event        // its event, for a notice
	receive   func()            // e.receiveCur, made once
	freeOps   *sendOp           // ops free for reuse (Send)
	timers    chunk.Of[timer]   // the rest of the chunk newTimer cuts timers from
	events    queue
	tasks     queue
	started   bool
	syncCut   bool // a connection has been up: the next follows a cut (syncAfterCut); false if Config.NoSyncAfterReconnect
	noSyncCut bool // Config.NoSyncAfterReconnect
	state     task.State
	session   *task.Session
	sessScope *task.Scope
	subs      []*subscription
	// spareSubs is the rest of the chunk Subscribe cuts subscriptions from.
	spareSubs chunk.Of[subscription]
	stepCount uint64
	flowSeq   uint64     // flows started (observed)
	opSeq     uint64     // requests sent (observed)
	obsState  task.State // the last state reported to the observer
	obsSince  time.Time  // when it was
	obsDepth  int        // the queue depth (events and tasks) last given to OnQueues
}

// frames is task.Frames under a name that keeps the embedded field
// unexported: it gives Executor the unexported method of task.Runtime.
type frames = task.Frames

type item struct {
	fn   func()
	r    runner        // instead of fn
	rcv  task.Receiver // instead of fn: a request's outcome (its response in inboxResps)
	w    task.Watcher  // instead of fn: a watch's notification (its event in inboxEvs)
	task bool          // true: task queue (paused while suspended); false: event queue
}

// New returns an executor for cfg. It starts no goroutine: call Run, or
// drive it with Step and RunUntilIdle.
func New(cfg Config) (*Executor, error) {
	e := &Executor{
		conn:      cfg.Conn,
		clock:     cfg.Clock,
		onError:   cfg.OnError,
		onSess:    cfg.OnSession,
		noSyncCut: cfg.NoSyncAfterReconnect,
		userObs:   cfg.Observer.Filled(),
		log:       cfg.Logger,
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	e.obs = e.userObs
	if e.log.Enabled(context.Background(), slog.LevelDebug) {
		// The executor's own use only: Observer still returns the
		// user's (nil if none), so what reports through task.ObserverOf
		// (combinators.Retry, the recipes) reaches the user's Observer
		// alone.
		e.obs = logOperations(e.log, e.obs)
	}
	e.receive = e.receiveCur
	task.SetWatchRecheck(&e.frames, cfg.WatchRecheck)
	if c, ok := cfg.Conn.(interface{ Clock() task.Clock }); ok && e.clock == nil {
		e.clock = c.Clock()
	}
	if e.clock == nil {
		e.clock = task.RealClock()
	}
	e.fclock, _ = e.clock.(firingClock)
	e.bgfclock, _ = e.clock.(bgFiringClock)
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	e.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	e.session = &task.Session{Epoch: 1}
	e.sessScope = task.NewSessionScope(e, e.session)
	if e.conn == nil {
		e.state = task.StateConnected
	}
	return e, nil
}

// post hands an item to the executor from any goroutine. It never blocks
// and never drops: the inbox is unbounded. It reports false only after the
// executor has stopped for good.
func (e *Executor) post(it item) bool {
	e.mu.Lock()
	if e.inboxClosed {
		e.mu.Unlock()
		return false
	}
	e.inbox = append(e.inbox, it)
	e.pending.Add(1)
	e.mu.Unlock()
	e.wakeRun()
	return true
}

// postOutcome hands a request's outcome to the executor, for rcv on the
// task queue, as post does.
func (e *Executor) postOutcome(rcv task.Receiver, resp *task.Response) bool {
	e.mu.Lock()
	if e.inboxClosed {
		e.mu.Unlock()
		return false
	}
	e.inbox = append(e.inbox, item{rcv: rcv, task: true})
	e.inboxResps = append(e.inboxResps, *resp)
	e.pending.Add(1)
	e.mu.Unlock()
	e.wakeRun()
	return true
}

// postNotice hands a watch's notification to the executor, for w on the
// task queue, as post does.
func (e *Executor) postNotice(w task.Watcher, ev *task.Event) {
	e.mu.Lock()
	if e.inboxClosed {
		e.mu.Unlock()
		return
	}
	e.inbox = append(e.inbox, item{w: w, task: true})
	e.inboxEvs = append(e.inboxEvs, *ev)
	e.pending.Add(1)
	e.mu.Unlock()
	e.wakeRun()
}

// wakeRun wakes Run after an item was posted. The item is counted in
// pending under mu, with its append: a drain that finds pending at zero
// has missed no item (the shutdown's last drain, once inboxClosed is set,
// finds every item posted before), however late the poster runs on.
func (e *Executor) wakeRun() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// refuses reports whether postFlow would refuse work now (Close called,
// Run's ctx ended, the shutdown begun). Any goroutine.
func (e *Executor) refuses() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.refusing && e.runCtx != nil && e.runCtx.Err() != nil {
		e.refusing = true
	}
	return e.refusing || e.inboxClosed
}

// postFlow hands a submitted flow to the executor from any goroutine,
// after arm (its deadline's arming, if not nil) on the event queue. It
// reports false, posting nothing, once Close has been called or the
// executor is stopping (Run's ctx has ended, or the shutdown has begun):
// work submitted then is refused. Run's ctx is asked here, on the
// submitting goroutine, rather than told by a callback of its own: a
// context.AfterFunc runs on a goroutine of its own, later, and a Submit
// made after the cancel returned could still overtake it.
func (e *Executor) postFlow(arm func(), r runner) bool {
	e.mu.Lock()
	if !e.refusing && e.runCtx != nil && e.runCtx.Err() != nil {
		e.refusing = true
	}
	if e.refusing || e.inboxClosed {
		e.mu.Unlock()
		return false
	}
	if arm != nil {
		e.inbox = append(e.inbox, item{fn: arm})
	}
	e.inbox = append(e.inbox, item{task: true, r: r})
	e.pending.Add(1)
	e.mu.Unlock()
	if e.afterPost != nil {
		e.afterPost()
	}
	e.wakeRun()
	return true
}

func (e *Executor) drain() {
	if e.pending.Load() == 0 {
		return
	}
	e.mu.Lock()
	in, resps, evs := e.inbox, e.inboxResps, e.inboxEvs
	e.inbox, e.inboxResps, e.inboxEvs = e.spare[:0], e.spareResps[:0], e.spareEvs[:0]
	e.pending.Store(0)
	e.mu.Unlock()
	r, v := 0, 0
	for i := range in {
		q := &e.events
		if in[i].task {
			q = &e.tasks
		}
		if in[i].w != nil {
			q.pushNotice(in[i].w, &evs[v])
			v++
			in[i] = item{}
			continue
		}
		j := job{fn: in[i].fn}
		if in[i].r != nil {
			j.x, j.kind = in[i].r, jobRunner
		}
		var resp *task.Response
		if in[i].rcv != nil {
			j.x = in[i].rcv
			resp = &resps[r]
			r++
		}
		q.push(j, resp)
		in[i] = item{}
	}
	clear(resps)
	clear(evs)
	e.spare, e.spareResps, e.spareEvs = in[:0], resps[:0], evs[:0]
	if o := e.obs; o != nil {
		e.reportQueues(o, len(in))
	}
}

// reportQueues gives the observer the queues' depths, moved having just
// come from the inbox.
func (e *Executor) reportQueues(o *task.Observer, moved int) {
	e.obsDepth = e.events.jobs.size + e.tasks.jobs.size
	o.OnQueues(task.QueueDepths{Moved: moved, Events: e.events.jobs.size, Tasks: e.tasks.jobs.size, Paused: !e.runnable()})
}

// Step runs at most one job and reports whether it ran one. Events (session
// changes, timers, cancellations) run before tasks; tasks (submitted flows
// and ready continuations) run only while the session is connected, or
// after the executor was closed, so that every flow can finish. Step must
// be called on the executor goroutine: one goroutine at a time, the same
// one that calls RunUntilIdle.
//
// Before each job, Step looks for a stop: Close called, or a context of
// CloseWhenDone (or Run's) ended. Once there is one, the next Step runs no
// job of the queues but shuts the executor down, as Shutdown does, and
// reports true; later Steps find nothing to run.
//
// Called from a job of e (a step of a flow, a continuation, a callback),
// Step runs nothing and reports false: jobs run one at a time, to
// completion, and a job run inside another would break that. On an
// executor a Run drives (or drove), Step runs nothing and reports false
// too, and RunUntilIdle returns 0: Run's goroutine is the executor
// goroutine, and a job run beside it would corrupt the queues.
func (e *Executor) Step() bool {
	if e.running.Load() {
		return false // Run drives e, or did: see stepDriver
	}
	return e.stepDriver()
}

// stepDriver is Step for Run's own loop, which Step refuses to anyone
// else: another goroutine stepping an executor Run drives would run jobs
// beside Run's goroutine, which the executor's state is not made for.
func (e *Executor) stepDriver() bool {
	if e.inJob && e.jobUnderWay() {
		return false
	}
	if !e.driving {
		e.enter()
		ran := e.stepOrStop()
		e.leave()
		return ran
	}
	return e.stepOrStop()
}

// stepOrStop is Step once e's goroutine is counted as its driver.
func (e *Executor) stepOrStop() bool {
	if !e.down && e.stopAsked() {
		e.shutdown()
		return true
	}
	return e.step()
}

// stopAsked reports whether Close was called or a stop context ended (and
// records the context's error for Run).
func (e *Executor) stopAsked() bool {
	if e.closeReq.Load() {
		return true
	}
	for _, ctx := range e.stopCtxs {
		select {
		case <-ctx.Done():
			e.stopErr = ctx.Err()
			return true
		default:
		}
	}
	return false
}

// CloseWhenDone makes the end of ctx stop the executor as Close does
// (Step, RunUntilIdle and Run shut it down before their next job), except
// that Run then returns ctx's error. Run does this for its own ctx; a
// simulation that drives the executor with Step uses it to end a process
// with a context. It must be called on the executor goroutine. A nil ctx,
// or one that never ends, does nothing.
func (e *Executor) CloseWhenDone(ctx context.Context) {
	if ctx != nil && ctx.Done() != nil {
		e.stopCtxs = append(e.stopCtxs, ctx)
	}
}

// step runs at most one job, as Step does, without looking for a stop.
func (e *Executor) step() bool {
	if !e.started {
		runJob(e, e.start)
	}
	e.drain()
	j := &e.cur
	if !e.events.pop(j, &e.curResp, &e.curEv) && !(e.runnable() && e.tasks.pop(j, &e.curResp, &e.curEv)) {
		// Nothing to run: the observer hears the depths again if they
		// changed since it last did, so that a gauge of them does not
		// keep a drained queue's depth.
		if o := e.obs; o != nil && e.obsDepth != e.events.jobs.size+e.tasks.jobs.size {
			e.reportQueues(o, 0)
		}
		return false
	}
	task.NewJob(&e.frames)
	e.stepCount++
	if j.fn != nil {
		fn := j.fn
		j.fn = nil
		runJob(e, fn)
	} else {
		runJob(e, e.receive)
	}
	return true
}

func (e *Executor) runnable() bool {
	return e.state == task.StateConnected || e.state == task.StateClosed
}

// RunUntilIdle runs jobs until none is runnable and returns how many ran.
// A simulation drives executors with it; tasks left waiting for a
// reconnect do not count as runnable. Called from a job of e, it runs
// nothing and returns 0, as Step does.
func (e *Executor) RunUntilIdle() int {
	if e.running.Load() || e.inJob && e.jobUnderWay() {
		return 0
	}
	entered := e.enter()
	n := 0
	for e.stepDriver() {
		n++
	}
	if entered {
		e.leave()
	}
	return n
}

// Paused reports whether the task queue is paused (no connected session).
func (e *Executor) Paused() bool { return !e.runnable() }

// Steps is the number of jobs run so far.
func (e *Executor) Steps() uint64 { return e.stepCount }

func (e *Executor) start() {
	e.started = true
	if e.conn == nil {
		return
	}
	if err := e.conn.Start(func(ev task.Event) {
		e.post(item{fn: func() { e.onEvent(ev) }})
	}); err != nil {
		// The executor cannot work without its connection (one another
		// executor started already, say): it stops as Close stops it,
		// and Run returns why.
		err = fmt.Errorf("executor: starting connection: %w", err)
		e.report(err)
		e.onEvent(task.Event{Type: task.EventNone, State: task.StateClosed})
		e.stopErr = err
		e.Close()
	}
}

// onEvent applies a session event: the state machine of the package doc.
//
// When the session ends (Expired, Closed, or a new session id without
// Expired first), the flows bound to it are ended in two phases around
// the publication of the event: first every scope of the session ends
// (Err reports it, nothing more starts), then Config.OnSession and every
// subscriber hear the event, and only then are the continuations and
// OnDone callbacks of the ended flows run. So a handle that learns of the
// end from session events has heard it before any continuation of its
// session runs, even when another subscriber cancels scopes or resumes
// waits of that session while it hears the event.
func (e *Executor) onEvent(ev task.Event) {
	if ev.Type != task.EventNone || e.state == task.StateClosed {
		return
	}
	var ended task.Delivery
	switch ev.State {
	case task.StateConnected:
		if e.session.ID != 0 && ev.SessionID != e.session.ID {
			// A new session without an Expired event first: treat it as
			// expiry, never as a silent switch, and say so to subscribers.
			old := e.session.ID
			e.state = task.StateExpired
			e.endSession(task.Event{Type: task.EventNone, State: task.StateExpired, SessionID: old}, e.expire())
		}
		e.session.ID = ev.SessionID
		e.session.Timeout = ev.Timeout
		e.state = task.StateConnected
		if f, ok := e.conn.(task.SessionFollower); ok {
			f.Follow(ev.SessionID)
		}
		if e.syncCut {
			e.syncAfterCut()
		}
		e.syncCut = !e.noSyncCut
	case task.StateSuspended:
		if e.state == task.StateConnected {
			e.state = task.StateSuspended
		}
	case task.StateExpired:
		if e.state != task.StateExpired {
			// The event is about the session that ends: a Conn puts an
			// id on Connected only, and expire replaces e.session.
			if ev.SessionID == 0 {
				ev.SessionID = e.session.ID
			}
			ended = e.expire()
		}
		e.state = task.StateExpired
	case task.StateClosed:
		if ev.SessionID == 0 {
			ev.SessionID = e.session.ID
		}
		e.state = task.StateClosed
		ended = e.sessScope.CancelDeferred(task.ErrClosed)
	default:
		return
	}
	e.endSession(ev, ended)
}

// syncAfterCut sends a sync ahead of every request of a connection that
// follows a cut (a reconnect, on the same session or a new one).
// ZooKeeper lets a session come back through any member that has applied
// the last zxid its client saw; a write whose reply the cut lost may not
// be applied there yet, and a read answered there would say it never was:
// a flow settling a lost create would not find its node and make a
// second, a cleanup would take a node for gone. A session's requests are
// served in the order they were sent, so every request after the sync is
// answered from a state no older than the leader's when the sync reached
// it, the lost write included if it was applied. Nothing waits for its
// reply (one round trip, pipelined with what follows), and it is not
// observed (Config.Observer). Executor goroutine.
func (e *Executor) syncAfterCut() {
	if e.conn == nil || e.stopAsked() {
		return
	}
	e.sendMu.Lock()
	if e.closeReq.Load() {
		e.sendMu.Unlock()
		return
	}
	e.doSend(&task.SyncRequest{Path: "/"}, func(task.Response) {}, nil)
}

// endSession publishes ev, then delivers ended: the continuations of the
// flows of an ended session run after every subscriber has heard of it.
// Delivered even when Config.OnSession or a subscriber panics (before
// the panic goes on up): the flows of the ended session get their
// outcome from the executor that stops on the panic.
func (e *Executor) endSession(ev task.Event, ended task.Delivery) {
	defer ended.Deliver()
	e.publish(ev)
}

// publish hands ev to Config.OnSession and to every subscriber.
func (e *Executor) publish(ev task.Event) {
	sess := *e.session
	e.observeSession(ev, sess)
	if e.onSess != nil {
		e.onSess(ev, sess)
	}
	for _, s := range e.subs {
		if !s.canceled {
			s.fn(ev)
		}
	}
	e.compactSubs()
}

// expire ends the current session: every flow bound to it ends with
// ErrSessionExpired, and later flows bind to the next session. The
// returned delivery runs the ended flows' continuations.
func (e *Executor) expire() task.Delivery {
	old := e.sessScope
	e.session = &task.Session{Epoch: e.session.Epoch + 1}
	e.sessScope = task.NewSessionScope(e, e.session)
	return old.CancelDeferred(task.ErrSessionExpired)
}

type subscription struct {
	fn       func(task.Event) // nil once canceled: it holds nothing then
	canceled bool
}

// subChunk is how many subscriptions Subscribe cuts from one allocation
// (their cancel functions are one each already): a recipe subscribes
// for each handle it gives out. A chunk lives while one of its
// subscriptions is referred to; a canceled one refers to nothing.
const subChunk = 16

func (e *Executor) compactSubs() {
	j := 0
	for _, s := range e.subs {
		if !s.canceled {
			e.subs[j] = s
			j++
		}
	}
	clear(e.subs[j:])
	e.subs = e.subs[:j]
}

func (e *Executor) report(err error) {
	if e.onError != nil {
		e.onError(err)
		return
	}
	e.log.Warn("zkflow: detached flow failed", "session", sessionAttr(e.session.ID), "err", err)
}

// Runtime implementation (executor goroutine only).

// Clock implements task.Runtime.
func (e *Executor) Clock() task.Clock { return e.clock }

// Schedule implements task.Runtime: fn joins the task queue.
func (e *Executor) Schedule(fn func()) { e.tasks.push(job{fn: fn}, nil) }

// receiveCur runs the current job, a runner, an outcome for its Receiver
// or a notice for its Watcher (e.receive is this method as a value, made
// once).
//
// Most outcomes and notices are for the executor's own sendOps, and many
// runners are its timers: those are called as what they are.
func (e *Executor) receiveCur() {
	x := e.cur.x
	switch e.cur.kind {
	case jobOutcome:
		resp := e.curResp
		e.cur, e.curResp = job{}, task.Response{}
		if op, ok := x.(*sendOp); ok {
			op.Receive(resp)
			return
		}
		x.(task.Receiver).Receive(resp)
	case jobNotice:
		ev := e.curEv
		e.cur, e.curEv = job{}, task.Event{}
		if op, ok := x.(*sendOp); ok {
			op.Notify(ev)
			return
		}
		x.(task.Watcher).Notify(ev)
	default: // a runner (curResp and curEv are zero: only their jobs set them)
		e.cur = job{}
		if t, ok := x.(*timer); ok {
			t.run()
			return
		}
		x.(runner).run()
	}
}

// AfterFunc implements task.Runtime: fn runs from the event queue once the
// clock reaches at.
func (e *Executor) AfterFunc(at time.Time, fn func()) task.Timer {
	t := e.newTimer(fn)
	d := at.Sub(e.clock.Now())
	if fc := e.fclock; fc != nil {
		t.t = fc.AfterFire(d, t)
		return t
	}
	t.t = e.clock.AfterFunc(d, t.fire)
	return t
}

// firingClock is a clock that calls a timer's Fire method rather than a
// function: the executor hands it the timer itself, not the method value
// t.fire, which would be an allocation per timer. AfterFire is
// AfterFunc(d, f.Fire) in every other respect (the order timers fire in
// included). An optional interface, as the anonymous type of its
// parameter lets a clock of another package (fakezk.Clock) have the
// method without importing this one.
type firingClock interface {
	AfterFire(d time.Duration, f interface{ Fire() }) task.Timer
}

// bgFiringClock is firingClock for AfterFuncBackground: its
// AfterFireBackground is AfterFuncBackground(d, f.Fire).
type bgFiringClock interface {
	AfterFireBackground(d time.Duration, f interface{ Fire() }) task.Timer
}

// AfterFuncBackground is AfterFunc for a timer that keeps no simulated
// clock going: on a clock that has AfterFuncBackground (fakezk.Clock,
// whose AdvanceToNext does not move time to such a timer alone) the timer
// is one of those, else an ordinary one. The task package's periodic
// re-reads of watched nodes use it (task.Watch), so that a test that
// advances a fake clock until no timer is left still ends.
func (e *Executor) AfterFuncBackground(at time.Time, fn func()) task.Timer {
	if fc := e.bgfclock; fc != nil {
		t := e.newTimer(fn)
		t.t = fc.AfterFireBackground(at.Sub(e.clock.Now()), t)
		return t
	}
	bc, ok := e.clock.(interface {
		AfterFuncBackground(time.Duration, func()) task.Timer
	})
	if !ok {
		return e.AfterFunc(at, fn)
	}
	t := e.newTimer(fn)
	t.t = bc.AfterFuncBackground(at.Sub(e.clock.Now()), t.fire)
	return t
}

// timer is an AfterFunc's timer. It is its own job on the event queue (a
// runner), so that a firing allocates nothing.
type timer struct {
	t task.Timer // the clock's, until the timer has run or was stopped
	e *Executor
	// fn is nil once the timer has run or was stopped (executor
	// goroutine only): no flag of its own, so that a timer is 32 bytes.
	fn func()
}

// timerChunk is how many timers newTimer cuts from one allocation: a
// flow arms and stops timers all the time (a deadline, a sleep, a
// watch's re-read), and the method value each hands a clock that is no
// firingClock is an allocation of its own already. A chunk lives while one of its timers is
// referred to; a timer that has run or was stopped refers to nothing but
// its executor.
const timerChunk = 16

// newTimer returns a timer for fn, cut from e's current chunk. Executor
// goroutine (as every task.Runtime method).
func (e *Executor) newTimer(fn func()) *timer {
	t := e.timers.New(timerChunk)
	t.e, t.fn = e, timerFunc(fn)
	return t
}

// timerFunc is the fn of a timer for AfterFunc's fn: a nil fn is a
// function that calls it (a timer's nil fn means it is done).
func timerFunc(fn func()) func() {
	if fn == nil {
		return callNil
	}
	return fn
}

// callNil calls a nil function, as a timer given one does when it runs.
func callNil() {
	var fn func()
	fn()
}

// fire runs on the clock's goroutine: the timer joins the event queue.
func (t *timer) fire() { t.e.post(item{r: t}) }

// Fire is fire, for a firingClock.
func (t *timer) Fire() { t.fire() }

// run runs fn on the executor goroutine, unless the timer was stopped.
func (t *timer) run() {
	if fn := t.fn; fn != nil {
		t.fn, t.t = nil, nil
		fn()
	}
}

func (t *timer) Stop() bool {
	if t.fn == nil {
		return false
	}
	t.fn = nil
	t.t.Stop()
	t.t = nil
	return true
}

// Send implements task.Runtime: completions and watch events join the task
// queue in the order the connection delivers them. Once a stop has been
// asked (Close, a stop context ended), requests are failed with
// task.ErrClosed, unsent.
//
// Close may be called on another goroutine while Send runs (with no Run
// to wait for, Close returns at once): Send looks at closeReq again under
// the send gate (sendMu), which it holds until Conn.Do has returned and
// which Close takes once after setting closeReq. So a request either
// reaches the connection before Close returns or is failed unsent.
func (e *Executor) Send(req task.Request, r task.Receiver, watch task.Watcher) {
	if o := e.obs; o != nil {
		e.sendObserved(o, req, r, watch)
		return
	}
	if e.conn == nil || e.state == task.StateClosed || e.stopAsked() {
		// Not sent: after Close (or the stop's ctx ended), even the rest
		// of the job under way sends nothing.
		e.tasks.push(job{x: r}, &task.Response{Err: task.ErrClosed})
		return
	}
	if e.state == task.StateSuspended {
		// Not sent: the connection may be back already, its Connected
		// not yet applied (an event job ran first), and a request sent
		// now would go ahead of the sync after the cut. The flow hears
		// of it after the reconnect (the task queue is paused).
		e.tasks.push(job{x: r}, &task.Response{Err: task.ErrNotSent})
		return
	}
	e.sendMu.Lock()
	if e.closeReq.Load() { // Close came since stopAsked: it may have returned
		e.sendMu.Unlock()
		e.tasks.push(job{x: r}, &task.Response{Err: task.ErrClosed})
		return
	}
	op := e.newOp(req, r, watch)
	e.doSend(req, op.done, op.notify)
}

// doSend hands req to the connection and opens the send gate (Send closed
// it). Close looks for its frame (doReturnPC): a Close made inside
// Conn.Do (an Observer.OnOpEnd run by a done that the Conn calls before
// Do returns) must not wait for the gate its own goroutine holds.
//
//go:noinline
func (e *Executor) doSend(req task.Request, done func(task.Response), notify func(task.Event)) {
	defer e.sendMu.Unlock() // even if Do panics: a later Close must not hang
	e.conn.Do(req, done, notify)
}

// doReturnPC is the return address of doSend's call of Conn.Do, as
// runtime.Callers reports it.
var doReturnPC = func() uintptr {
	c := &pcConn{}
	e := &Executor{conn: c}
	e.sendMu.Lock()
	e.doSend(nil, nil, nil)
	return c.pc[0]
}()

// pcConn is a Conn whose Do records its caller's return address.
type pcConn struct{ pc [1]uintptr }

func (c *pcConn) Start(func(task.Event)) error { return nil }
func (c *pcConn) Do(task.Request, func(task.Response), func(task.Event)) {
	runtime.Callers(2, c.pc[:])
}
func (c *pcConn) Close() error { return nil }

// Current implements task.Runtime.
func (e *Executor) Current() (task.Session, task.State) { return *e.session, e.state }

// SessionScope implements task.Runtime.
func (e *Executor) SessionScope() *task.Scope { return e.sessScope }

// Subscribe implements task.Runtime. A nil fn registers nothing (as a
// nil Scope.OnDone callback does): called at the next session event, it
// would panic in the job that applies it, far from the call that gave it.
func (e *Executor) Subscribe(fn func(task.Event)) func() {
	if fn == nil {
		return func() {}
	}
	s := e.spareSubs.New(subChunk)
	s.fn = fn
	e.pruneSubs()
	e.subs = append(e.subs, s)
	return func() { s.canceled, s.fn = true, nil }
}

// Rand implements task.Runtime.
func (e *Executor) Rand() uint64 { return e.rng.Uint64() }

// Report implements task.Runtime.
func (e *Executor) Report(err error) { e.report(err) }

// PacketRoom implements task.PacketSizer for the flows on e (see
// task.PacketRoom): its Conn's answer when the Conn is a task.PacketSizer,
// else the room under task.MaxPacketSize with no root. Any goroutine.
func (e *Executor) PacketRoom(req task.Request) int {
	if ps, ok := e.conn.(task.PacketSizer); ok {
		return ps.PacketRoom(req)
	}
	return task.MaxPacketSize - reqcheck.PacketSize(req)
}

// Abandon releases what an executor that will never run again still
// holds: the goroutines of the task.Flow bodies suspended in its flows
// are unwound (their deferred functions run; no continuation is called,
// no step runs, nothing is sent). A simulation calls it on the executor
// of a process it crashes; it must be called on the goroutine that drove
// the executor, and the executor must not be driven afterwards: work
// submitted after Abandon is refused with task.ErrClosed. A body whose
// deferred function panics sends the panic on up out of Abandon once the
// other bodies are unwound.
func (e *Executor) Abandon() {
	// Counted as driven while the bodies unwind, as Shutdown's unwind
	// is: a blocking call in a deferred function of a body then fails
	// with ErrOnExecutor rather than wait for an executor nobody drives.
	if e.enter() {
		defer e.leave()
	}
	e.mu.Lock()
	e.refusing = true // work submitted from now on is refused with task.ErrClosed
	e.mu.Unlock()
	e.closeReq.Store(true) // a deferred function's request is failed unsent
	task.Unwind(&e.frames)
}

// ErrStopped is returned by Run when the executor was already stopped.
var ErrStopped = errors.New("executor: stopped")

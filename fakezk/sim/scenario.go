package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// Scenario is a simulated test: a world of clients, a workload that runs
// for a bounded simulated time under the faults the seed picks, a
// liveness condition to reach once the faults stop, and invariants.
//
// One run of a seed goes through these phases, all on the calling
// goroutine and the world's simulated clock:
//
//  1. build the world (Clients, SessionTimeout, Server, Wrap) and run
//     Setup with no fault;
//  2. switch the seed's fault plan on, call Workload (which starts flows
//     with Submit) and run until Duration of simulated time has passed;
//  3. switch the faults off (partitions and restarts already under way
//     heal on their own) and run until Live holds, within Recovery;
//  4. set Stopping, and run until Quiesce holds (if set), within Recovery;
//  5. check every Invariant, then close the world.
//
// A violation reported with Trial.Errorf or Trial.Check during the run, a
// failed Invariant, Live or Quiesce not reached in time, or a world that
// runs without time passing ends the seed as a failure.
type Scenario struct {
	// Name labels the scenario in reports.
	Name string
	// Clients is the number of clients (each an executor with a session).
	Clients int
	// SessionTimeout is every client's requested timeout (default 4s).
	SessionTimeout time.Duration
	// Server configures the fake server (Seed, Clock, Deterministic and
	// Trace are set by the run).
	Server fakezk.Config
	// Wrap, if set, wraps client i's connection (see Config.Wrap).
	Wrap func(i int, c *fakezk.Conn) task.Conn
	// Root, if set, is every client's chroot (Config.Root): the world
	// creates it, the recipes run below it, and the world's readers of
	// the server's tree (Children, NodeStat, Paths...) take the clients'
	// paths. Explore sets it for one seed in four (ExploreRoot).
	Root string
	// Faults says which fault classes the seed may switch on.
	Faults Faults
	// Duration is the simulated time the workload runs under faults
	// (default 20s).
	Duration time.Duration
	// Recovery bounds the simulated time to reach Live, and then
	// Quiesce, after the faults stop (default 2 minutes).
	Recovery time.Duration
	// Setup prepares the world before the faults start (nodes, stores).
	// An error fails the seed.
	Setup func(r *Trial) error
	// Workload starts the flows. It runs once, on the calling goroutine;
	// the flows run as the world is driven.
	Workload func(r *Trial)
	// Live is the progress the workload must make once the faults have
	// stopped. Nil means: every client called Trial.Progress after the
	// faults stopped.
	Live func(r *Trial) bool
	// Quiesce, if set, is the state the workload must wind down to once
	// Stopping is set (flows ended, nodes cleaned up), before the
	// invariants are checked.
	Quiesce func(r *Trial) bool
	// Restart starts client i's workload again after a CrashRestart fault
	// replaced its process (World.Crash): r.Execs[i] is the new process's
	// executor, on a new session, with no flow. The old process's flows
	// never deliver again, so state the workload keeps for client i (a
	// handle, a flag saying a loop ended) is the dead process's: reset it
	// here. Required when Faults.Allow has CrashRestart.
	Restart func(r *Trial, i int)
	// Operator lists the nodes an operator may delete or create again
	// (the Operator fault), by the clients' paths (below Root, if set):
	// every node whose path begins with one of
	// these strings ("/locks/l" is the directory and what is below it,
	// "/locks/l/" only what is below it, "/db/r0/_p_" the nodes so
	// named), leaves only (a node with children is never deleted). Name
	// the recipe's own nodes (its master node, candidates, contenders,
	// assignments, members), not the checkers' (a fencing log), nor
	// nodes whose loss no recipe can survive (a counter's value, a
	// marker only its creator writes). Required when Faults.Allow has
	// Operator.
	Operator []string
	// OperatorWrites lets the operator also write data to a live leaf
	// among the Operator nodes (one act in four): its version moves, as a
	// zkCli set does. For recipes whose docs say what someone else's write
	// to their nodes does (a lock or lease lost, a leader deposed).
	OperatorWrites bool
	// OperatorNoWrites lists, among the Operator nodes, those the
	// operator never writes even with OperatorWrites (it may delete
	// them): nodes whose recipe's doc rules such writes out, such as a
	// lock's waiting contenders inside another recipe (recipes/lock: a
	// write passes for the holder's mark).
	OperatorNoWrites []string
	// OperatorDeleteOnly lists, among the Operator nodes, those the
	// operator only deletes and never creates again under the same name:
	// nodes named with a secret of their holder (a 128-bit random prefix),
	// whose re-creation under that exact name is a forgery the recipe's
	// doc says its fence cannot see (a lock's contenders).
	OperatorDeleteOnly []string
	// OperatorSpare lists nodes (exact clients' paths) among the Operator
	// nodes that the operator never deletes nor writes: nodes whose
	// deletion the recipe's doc rules out because no version check can
	// see it (a Master's leases directory, whose version fences a former
	// master's late delete of the node: made again, its version restarts).
	OperatorSpare []string
	// OwnDeletes lists paths (by the clients' paths; "/" for the whole
	// tree): directories, each judged with every node below it, or nodes
	// judged alone (a Master's node). Every ephemeral node at or below
	// them is deleted only by its own session (its delete or its end),
	// the server or an operator, never by another client's session: the
	// promise of a recipe whose processes give back only their own nodes.
	// A multi that deletes a node and makes its path again deletes it
	// too. Each is judged from the server's journal from the end of Setup
	// on.
	OwnDeletes []string
	// OperatorClients lists the clients whose processes the OwnDeletes
	// judges count as an operator: a scenario's own operator that runs on
	// a client's executor beside a workload that deletes nothing there
	// (idpersist's deposer, on a generator's). With them, a delete of
	// another session's node is judged at the end of the seed, when every
	// session's process is known.
	OperatorClients []int
	// OwnIncarnations lists nodes (by the clients' paths; each judged
	// with every node below it) that a client's process deletes, when
	// persistent, only if one of its sessions made or wrote that node
	// (that incarnation, by its czxid): a node another process or an
	// operator made is never deleted by it, also where its own node was
	// before (the promise of a recipe that gives back only the node it
	// made or kept, whose delete settled after a lost reply, or sent
	// after a cut, must leave a node made again at the path meanwhile),
	// but in ZooKeeper's window between a read and the delete at the
	// version read (ownincarnations.go). A multi that deletes a node and
	// makes its path again deletes it too. Judged from the server's
	// journal from the end of Setup on, at the end of the seed.
	OwnIncarnations []string
	// Counters lists the directories whose counter (cversion) names the
	// recipe's sequential children, by the clients' paths: the Counters
	// fault sets one near int32's maximum, the EmptyDir fault deletes one
	// while it is empty. Required when Faults.Allow has either.
	Counters []string
	// ACL lists the nodes whose ACL an operator may change for a while
	// (the ACL fault), by the clients' paths, as Operator names them, but
	// inner nodes too: a directory whose ACL refuses the clients their
	// creates and deletes of its children, or their listings. Name the
	// recipe's nodes and directories, not the checkers'. Required when
	// Faults.Allow has ACL; a scenario that allows it must take
	// task.ErrNoAuth as the passing refusal it is while the fault lasts.
	ACL []string
	// NoTwins keeps every client's executor seed its own. Otherwise one
	// seed in four with two clients or more (drawn from a stream of its
	// own: the other seeds keep their history) starts two clients with
	// one executor seed (Plan.Twin): two processes that draw the same
	// random numbers, as two copies of one program started with one
	// seed do, so every "unique" name or prefix a recipe draws is drawn
	// twice.
	NoTwins bool
	// InJobEnds has one in three of the contexts the actors make with
	// CancelAfterSteps end inside the job of their client's executor that
	// ends a flow (Config.InJobEnds): for the blocking faces, whose calls
	// must give back what an outcome handed over as their context ended
	// brings.
	InJobEnds bool
	// OutageEnds has one seed in two with faults (Plan.OutageEnds, drawn
	// from a stream of its own: the other seeds keep their history) end
	// one in three of the contexts the actors make with CancelAfterSteps
	// inside an outage instead: the world cuts the client off just after
	// it sends a drawn request (ContextOutage, Config.OutageEnds). For the
	// blocking faces, whose calls left waiting for a reconnect as their
	// context ends (a release whose delete the loss took) must still give
	// back what they hold.
	OutageEnds bool
	// ActorLag has one actor wake-up in four come 1 to 8 steps late
	// (Config.ActorLag): a goroutine the scheduler runs late, while the
	// executors go on. For the blocking faces, whose calls race their
	// executor (a difference handed back after another goroutine's call
	// was served).
	ActorLag bool
	// SyncAfterReconnect runs the executors with their sync after a
	// reconnect on (Config.SyncAfterReconnect), as executor.Config has
	// it by default, in every seed. Otherwise it is off but in one seed
	// in four of Explore's (SyncedSeed): the others hold the recipes to
	// settling their lost writes on their own, as on an executor with it
	// off; those run the executors as users do. RunSeed, the canaries'
	// hunts and Check run it as set.
	SyncAfterReconnect bool
	// LagWatched has a lagging member answer the scenario's watched reads
	// from its view too (fakezk.Server.LagWatchedReads) in every seed
	// whose plan has the lag class: a watch such a read sets fires at
	// once for a change the member has not applied. Otherwise one such
	// seed in two does (Plan.LagWatched, drawn from a stream of its own:
	// the other seeds keep their history), and the others have a watched
	// read catch the member up first.
	LagWatched bool
	// NoLagWatched turns that draw off: watched reads catch the member up
	// in every seed unless LagWatched is set. For a canary hunted, or a
	// regression seed recorded (Regression.NoLagWatched), in the histories
	// from before the draw.
	NoLagWatched bool
	// NoRestartLag turns off the lag of a restarted process's new session
	// (see Lag): for a regression seed recorded before it
	// (Regression.NoRestartLag), so that it replays the same history.
	NoRestartLag bool
	// NoReconnectLag turns off the lagging member a session may come back
	// through after a cut that lost replies (see Lag): a regression seed
	// replays without it unless it failed with it (Regression.ReconnectLag).
	NoReconnectLag bool
	// NoBlinks turns off the blink and operator-in-cut classes
	// (blink.go), and the lagging member a session may come back through
	// after the cut of a context's outage (outage.go): for a regression
	// seed recorded before them, so that it replays the same history
	// (Regression.Blinks).
	NoBlinks bool
	// NoRemoveWatches turns off the remove-watches class (RemoveWatch):
	// for a regression seed recorded before it, so that it replays the
	// same history (Regression.RemoveWatches).
	NoRemoveWatches bool
	// Invariants are checked at the end of every seed.
	Invariants []Invariant
	// MaxSteps bounds the clock advances of each phase (default 200000).
	MaxSteps int
	// Regressions are seeds of this scenario that once failed: Explore
	// (make sim) and Regressions (a package's TestSimRegressions) replay
	// every one. A seed that fails is added here with what went wrong,
	// and stays after the fix.
	Regressions []Regression
}

// Invariant is a property checked at the end of a seed's run. Checkers
// that judge events as they happen (IDs, Leaders, Tasks) also report
// through Trial.Check at once.
type Invariant interface {
	Check(r *Trial) error
}

// InvariantFunc makes a func an Invariant.
type InvariantFunc func(r *Trial) error

// Check calls f.
func (f InvariantFunc) Check(r *Trial) error { return f(r) }

// Trial is one seed's run of a scenario: the world plus what the workload
// needs to judge and report. Use it from the goroutine driving the world
// (Setup, Workload, continuations on the executors, invariants) or from an
// actor (World.Go) while the actor has the turn: the world does not step
// while an actor runs, so neither needs a lock.
type Trial struct {
	*World
	// Rand is the workload's randomness, drawn from the seed.
	Rand *rand.Rand
	// Plan is the fault plan the seed chose.
	Plan Plan

	sc         *Scenario
	own        []*ownDeletes      // Scenario.OwnDeletes' judges
	incs       []*ownIncarnations // Scenario.OwnIncarnations' judges
	violations []error
	failedAt   time.Duration // when the first violation was recorded
	kind       FailureKind
	faultsOff  bool
	stopping   bool
	closed     bool
	progress   []int
	after      []bool
	// notes are the Logf lines one after another, noteEnds where each
	// ends: made strings once, for the Result (lines).
	notes    []byte
	noteEnds []int
}

// Errorf records a safety violation; the seed fails and the run stops at
// the next point it checks. Reports made once the world is closing
// (executors shutting down fail every flow) are ignored.
func (r *Trial) Errorf(format string, args ...any) {
	if r.closed {
		return
	}
	r.violate(Safety, fmt.Errorf(format, args...))
}

// violate records a violation of the given kind (the first sets the kind
// of the failure and its instant).
func (r *Trial) violate(kind FailureKind, err error) {
	if len(r.violations) == 0 {
		r.failedAt = r.Elapsed()
	}
	r.violations = append(r.violations, err)
	if r.kind == 0 {
		r.kind = kind
	}
}

// Check records err, if not nil, as a safety violation.
func (r *Trial) Check(err error) {
	if err != nil {
		r.Errorf("%w", err)
	}
}

// Failed reports whether a violation was recorded.
func (r *Trial) Failed() bool { return len(r.violations) > 0 }

// Logf adds a line to the run's notes, printed with the trace when the
// seed fails (the workload's view of what happened, with the simulated
// time).
func (r *Trial) Logf(format string, args ...any) {
	// "<ms> " as fmt's "%d " writes it, then the line, appended to the
	// notes: no string per line (a workload may log at every step).
	b := append(strconv.AppendInt(r.notes, r.Elapsed().Milliseconds(), 10), ' ')
	r.notes = fmt.Appendf(b, format, args...)
	r.noteEnds = append(r.noteEnds, len(r.notes))
}

// lines returns the Logf lines (nil if none), cut from one string.
func (r *Trial) lines() []string {
	if len(r.noteEnds) == 0 {
		return nil
	}
	text := string(r.notes)
	lines := make([]string, len(r.noteEnds))
	from := 0
	for i, end := range r.noteEnds {
		lines[i] = text[from:end]
		from = end
	}
	return lines
}

// Progress records that client i completed a unit of work (what counts
// is the workload's to say). The default liveness condition asks every
// client for one after the faults stop.
func (r *Trial) Progress(i int) {
	r.progress[i]++
	if r.faultsOff {
		r.after[i] = true
	}
}

// ProgressedSinceFaults reports whether client i made progress after the
// faults stopped.
func (r *Trial) ProgressedSinceFaults(i int) bool { return r.after[i] }

// FaultsOn reports whether the fault plan is still active.
func (r *Trial) FaultsOn() bool { return !r.faultsOff }

// Stopping reports whether the workload should wind down: liveness was
// shown and no new rounds should start.
func (r *Trial) Stopping() bool { return r.stopping }

// Closing reports whether the world is being closed: executors fail every
// flow with task.ErrClosed, and the workload must not restart them.
func (r *Trial) Closing() bool { return r.closed }

// Elapsed is the simulated time since the world was built.
func (r *Trial) Elapsed() time.Duration { return r.Clock.Now().Sub(fakezk.Epoch) }

// FailureKind says why a seed failed.
type FailureKind uint8

const (
	// Safety: an invariant or a check of the workload failed.
	Safety FailureKind = iota + 1
	// Liveness: no progress within Recovery once the faults stopped, or
	// the world ran without time passing.
	Liveness
	// SetupFailed: Setup failed or the world could not be built.
	SetupFailed
)

func (k FailureKind) String() string {
	switch k {
	case Safety:
		return "safety"
	case Liveness:
		return "liveness"
	case SetupFailed:
		return "setup"
	}
	return "ok"
}

// Result is the outcome of one seed.
type Result struct {
	Scenario string
	Seed     uint64
	Plan     Plan
	// Root is the clients' chroot the seed ran under ("" for none).
	Root string
	// Err is the first violation (nil if the seed passed), Kind its kind,
	// FailedAt the simulated time it was recorded at (since the world was
	// built).
	Err      error
	Kind     FailureKind
	FailedAt time.Duration
	// Fired counts the faults injected, per class.
	Fired [numClasses]int
	// SimTime is the simulated time the run took.
	SimTime time.Duration
	// Faults lists the injected faults with their simulated times (ms).
	Faults []string
	// Notes are the workload's Logf lines.
	Notes []string
	// Trace and TraceHash are the server's event log and its hash, when
	// the run was traced.
	Trace     []string
	TraceHash string
	// timeline is the seed's picture (runTimeline; nil otherwise).
	timeline *timeline
}

// FiredOf returns how many faults of class c were injected.
func (res *Result) FiredOf(c FaultClass) int { return res.Fired[c] }

// RunSeed runs one seed of sc and returns its result. With trace set the
// server records its event log (slower; the history is the same).
func RunSeed(sc Scenario, seed uint64, trace bool) Result { return runSeed(sc, seed, trace, nil) }

// runTimeline runs one seed of sc traced, as RunSeed, and records its
// timeline too (Result.timeline, drawn by timeline.WriteSVG): the same
// history, with the faults, session events, bars and violation noted as
// they happen.
func runTimeline(sc Scenario, seed uint64) Result { return runSeed(sc, seed, true, &timeline{}) }

func runSeed(sc Scenario, seed uint64, trace bool, tl *timeline) Result {
	res := Result{Scenario: sc.Name, Seed: seed, Root: sc.Root}
	rng := rand.New(rand.NewPCG(seed, 0x5349_4d46_4155_4c54))
	prng := rand.New(rand.NewPCG(seed, 0x5052_4f43_4553_5321))
	crng := rand.New(rand.NewPCG(seed, 0x434f_554e_5445_5253))
	lrng := rand.New(rand.NewPCG(seed, 0x4c41_4747_494e_4721))
	arng := rand.New(rand.NewPCG(seed, 0x4143_4c5f_4641_554c))
	res.Plan = drawPlan(sc.Faults, rng, prng, crng, lrng, arng)
	if !sc.NoTwins {
		res.Plan.Twin = drawTwin(seed, sc.Clients)
	}
	if res.Plan.On.Has(Lag) {
		res.Plan.LagWatched = sc.LagWatched || !sc.NoLagWatched && drawLagWatched(seed)
	}
	res.Plan.OutageEnds = sc.OutageEnds && res.Plan.On != 0 && drawOutageEnds(seed)
	res.Plan.Blinks = res.Plan.On != 0 && !sc.NoBlinks && drawBlinks(seed)
	res.Plan.SyncAfterReconnect = sc.SyncAfterReconnect
	if sc.Faults.Allow.Has(CrashRestart) && sc.Restart == nil {
		res.Err, res.Kind = errors.New("sim: the scenario allows crash-restart but has no Restart hook"), SetupFailed
		return res
	}
	if sc.Faults.Allow.Has(Operator) && len(sc.Operator) == 0 {
		res.Err, res.Kind = errors.New("sim: the scenario allows operator faults but names no Operator paths"), SetupFailed
		return res
	}
	if sc.Faults.Allow.Has(ACL) && len(sc.ACL) == 0 {
		res.Err, res.Kind = errors.New("sim: the scenario allows acl faults but names no ACL paths"), SetupFailed
		return res
	}
	if sc.Faults.Allow&CounterFaults != 0 && len(sc.Counters) == 0 {
		res.Err, res.Kind = errors.New("sim: the scenario allows counter faults but names no Counters directories"), SetupFailed
		return res
	}
	srvCfg := sc.Server
	srvCfg.Trace = trace
	own := make([]*ownDeletes, len(sc.OwnDeletes))
	incs := make([]*ownIncarnations, len(sc.OwnIncarnations))
	if len(own)+len(incs) > 0 {
		for i, d := range sc.OwnDeletes {
			own[i] = &ownDeletes{dir: d, operators: sc.OperatorClients}
		}
		for i, d := range sc.OwnIncarnations {
			incs[i] = &ownIncarnations{path: d}
		}
		journal := srvCfg.Journal
		srvCfg.Journal = func(c fakezk.Commit) {
			if journal != nil {
				journal(c)
			}
			for _, o := range own {
				o.journal(c)
			}
			for _, o := range incs {
				o.journal(c)
			}
		}
	}
	w, err := New(Config{Seed: seed, Clients: sc.Clients, Server: srvCfg, SessionTimeout: sc.SessionTimeout,
		Wrap: sc.Wrap, MaxSteps: sc.MaxSteps, Root: sc.Root, Twin: res.Plan.Twin, InJobEnds: sc.InJobEnds, OutageEnds: res.Plan.OutageEnds, Blinks: res.Plan.Blinks, ActorLag: sc.ActorLag, SyncAfterReconnect: sc.SyncAfterReconnect,
		RecheckWatches: true, timeline: tl})
	if err != nil {
		res.Err, res.Kind = err, SetupFailed
		return res
	}
	r := &Trial{World: w, Rand: rand.New(rand.NewPCG(seed, 0x574f_524b_4c4f_4144)), Plan: res.Plan, sc: &sc,
		progress: make([]int, sc.Clients), after: make([]bool, sc.Clients), own: own, incs: incs}
	maxWipes := sc.Faults.MaxWipes
	if maxWipes <= 0 {
		maxWipes = 1
	}
	inj := newInjector(w, res.Plan, maxWipes, rng, prng, crng, lrng, arng)
	inj.operator = sc.Operator
	inj.aclPaths = sc.ACL
	inj.counters = sc.Counters
	inj.deleteOnly = sc.OperatorDeleteOnly
	inj.spare = sc.OperatorSpare
	inj.writes = sc.OperatorWrites
	inj.noWrites = sc.OperatorNoWrites
	if sc.Restart != nil {
		inj.restart = func(i int) { sc.Restart(r, i) }
	}
	if res.Plan.On.Has(Lag) && !sc.NoRestartLag {
		inj.rlrng = rand.New(rand.NewPCG(seed, 0x5253_544c_4147_2121))
	}
	if res.Plan.On.Has(Lag) && !sc.NoReconnectLag {
		inj.rclrng = rand.New(rand.NewPCG(seed, 0x5243_4e4c_4147_2121))
	}
	if res.Plan.On.Has(Operator) && !sc.NoBlinks {
		inj.ocrng = rand.New(rand.NewPCG(seed, 0x4f50_494e_4355_5421))
	}
	if res.Plan.On.Has(Lag) && !sc.NoReconnectLag && !sc.NoBlinks {
		inj.oclrng = rand.New(rand.NewPCG(seed, 0x4f43_4c41_4721_2121))
	}
	if res.Plan.On != 0 && !sc.NoRemoveWatches {
		res.Plan.RemoveWatchRate, inj.rwrng = drawRemoveWatches(seed, sc.Faults)
		inj.plan.RemoveWatchRate = res.Plan.RemoveWatchRate
	}
	w.inj = inj
	r.run(inj)
	res.Fired = inj.firedCounts()
	r.closed = true
	w.Close()
	if len(r.violations) > 0 {
		res.Err, res.Kind, res.FailedAt = errors.Join(r.violations...), r.kind, r.failedAt
	}
	res.SimTime = r.Elapsed()
	res.Faults = inj.log
	res.Notes = r.lines()
	if trace {
		res.Trace = w.Server.Trace()
		res.TraceHash = w.Server.TraceHash()
	}
	if tl != nil {
		tl.finish(&res, len(w.procs))
		res.timeline = tl
	}
	return res
}

func (r *Trial) fail(kind FailureKind, format string, args ...any) {
	r.violate(kind, fmt.Errorf(format, args...))
}

func (r *Trial) run(inj *injector) {
	sc := r.sc
	duration, recovery := sc.Duration, sc.Recovery
	if duration <= 0 {
		duration = 20 * time.Second
	}
	if recovery <= 0 {
		recovery = 2 * time.Minute
	}
	if sc.Setup != nil {
		if err := sc.Setup(r); err != nil {
			r.fail(SetupFailed, "setup: %w", err)
			return
		}
	}
	for _, o := range r.own {
		o.start(r)
	}
	for _, o := range r.incs {
		o.start(r)
	}
	// Phase 2: the workload under faults.
	r.phase("faults on")
	if inj.plan.On.Has(Lag) {
		// From here a lag may hide whatever its client has not heard of;
		// every member has applied the setup.
		r.Server.KeepHistory()
		r.Server.LagWatchedReads(inj.plan.LagWatched)
	}
	inj.active, inj.started = true, true
	if sc.Workload != nil {
		sc.Workload(r)
	}
	end := r.Clock.Now().Add(duration)
	inj.until = end
	r.Settle(func() bool { return r.Failed() || !r.Clock.Now().Before(end) })
	inj.active = false
	r.faultsOff = true
	if inj.plan.On.Has(Lag) {
		r.Server.EndLags() // as partitions heal: every member catches up
	}
	inj.endACLs()
	r.phase("faults off")
	if r.Failed() {
		return
	}
	if r.Stalled() {
		r.fail(Liveness, "flows ran at one instant without end (time never passed) at %s", r.Elapsed())
		return
	}
	// Phase 3: progress once the faults stop.
	live := sc.Live
	if live == nil {
		live = func(r *Trial) bool {
			for i := range r.after {
				if !r.after[i] {
					return false
				}
			}
			return true
		}
	}
	stopped := r.Elapsed()
	if !r.within(recovery, func() bool { return live(r) }) {
		switch {
		case r.Failed():
		case r.Elapsed()-stopped < recovery:
			// Nothing was left to run, nor a timer to wait for.
			r.fail(Liveness, "no progress after the faults stopped at %s: the world went idle at %s, nothing left to run (progress per client %v, since: %v); a workload reports each client's progress with Trial.Progress, or the Scenario says what progress is with Live",
				stopped, r.Elapsed(), r.progress, r.after)
		default:
			r.fail(Liveness, "no progress within %s after the faults stopped at %s (progress per client %v, since: %v)",
				recovery, stopped, r.progress, r.after)
		}
		return
	}
	// Phase 4: wind down.
	r.phase("stopping")
	r.stopping = true
	if sc.Quiesce != nil && !r.within(recovery, func() bool { return sc.Quiesce(r) }) {
		if !r.Failed() {
			r.fail(Liveness, "did not quiesce within %s after liveness was shown", recovery)
		}
		return
	}
	// Phase 5: invariants.
	r.phase("invariants")
	for _, o := range r.own {
		o.check()
	}
	for _, o := range r.incs {
		o.check()
	}
	for _, inv := range sc.Invariants {
		if err := inv.Check(r); err != nil {
			r.fail(Safety, "invariant: %w", err)
		}
	}
	if out := r.escaped(); len(out) > 0 {
		r.fail(Safety, "nodes outside the clients' root %s: %v", r.root, out)
	}
}

// within settles until done holds, a violation is recorded, or d of
// simulated time has passed; it reports whether done held.
func (r *Trial) within(d time.Duration, done func() bool) bool {
	limit := r.Clock.Now().Add(d)
	ok := r.Settle(func() bool { return r.Failed() || done() || r.Clock.Now().After(limit) })
	return ok && !r.Failed() && !r.Clock.Now().After(limit) && done()
}

// NoClientErrors fails if an executor reported an error (a failed
// cleanup, an unhandled fork: World.Errs) that matches none of allowed.
func NoClientErrors(allowed ...error) Invariant {
	return InvariantFunc(func(r *Trial) error {
		for _, err := range r.Errs {
			ok := false
			for _, a := range allowed {
				if errors.Is(err, a) {
					ok = true
					break
				}
			}
			if !ok {
				return fmt.Errorf("reported by an executor: %w", err)
			}
		}
		return nil
	})
}

package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// FaultClass is one kind of fault the simulation injects.
type FaultClass uint8

// The fault classes. Each injection picks a class among those the seed's
// plan switched on, and a client for the per-client ones.
const (
	// DropUnapplied breaks a client's connection; requests in flight are
	// not applied (the client sees connection loss and reconnects at once).
	DropUnapplied FaultClass = iota
	// DropApplied breaks a client's connection after the server applied
	// its requests in flight: the client sees connection loss for writes
	// that did happen (ZooKeeper's CONNECTIONLOSS ambiguity).
	DropApplied
	// PartitionShort cuts a client off for less than its session timeout:
	// it resumes the same session.
	PartitionShort
	// PartitionLong cuts a client off for longer than its session timeout:
	// the server expires the session and the client learns it on return.
	PartitionLong
	// Expire expires a client's session at once.
	Expire
	// Delay holds a client's deliveries for up to a second.
	Delay
	// Restart stops the server for a while and starts it with its data and
	// sessions (Server.Restart), or, half the time, takes its quorum away
	// for a while (Server.LoseQuorum: up, data and sessions kept, every
	// handshake refused): every client loses its connection.
	Restart
	// Wipe loses every server and its data (total ensemble loss). The
	// empty servers refuse, at the handshake, every client that has seen
	// a later zxid, until it waives its zxid more than a session timeout
	// after it last heard from a server and learns its session expired
	// (or the new zxids pass what it saw). Only on when the scenario allows it
	// (Faults.Allow includes it).
	Wipe
	// ClockJump moves the clock forward at once by up to twice the session
	// timeout: every timer that falls due fires.
	ClockJump

	// The process and operator classes. A seed draws them, and injects
	// them, from a random stream of their own, so that a seed whose plan
	// has none of them runs the history it ran before they existed.

	// CrashRestart kills a client's process with no cleanup (World.Crash):
	// its flows never deliver again, its timers never fire, its session
	// lives on at the server until it expires by timeout. A new process
	// with the same identity (the same client index and executor seed)
	// starts at once on a new session, and Scenario.Restart starts its
	// workload again.
	CrashRestart
	// Operator deletes a live node under Scenario.Operator through the
	// server's admin path (no session) and, one time in two, creates it
	// again at the same path, with the same data or other data, as an
	// ephemeral of an operator's session that expires after the session
	// timeout or as a persistent node the operator deletes again within
	// twice the timeout.
	Operator
	// Pause freezes a client's process for 1.2..3× its session timeout
	// (World.Pause): its executor is not stepped, its timers and
	// deliveries are held, and the server, hearing nothing, expires its
	// session. Then it runs on, believing what it believed, and learns
	// of the expiry only as it reads what was held.
	Pause

	// The counter classes. A seed draws them, and injects them, from a
	// third random stream, so that a seed whose plan has neither runs the
	// history it ran before they existed. Both act on the directories a
	// scenario names in Scenario.Counters: the directories whose cversion
	// names sequential children.

	// Counters sets a directory's stored cversion (the counter that names
	// its sequential children) to within 4 of int32's maximum, below it
	// (World.SetCounters), as after two billion creates: the next names
	// reach 2147483647, where ZooKeeper 3.8's counter stays (fakezk
	// models it), so every later create is named 2147483647 too.
	Counters
	// EmptyDir deletes an empty directory through the server's admin
	// path (an operator tidying up): a recipe that creates it again
	// starts its counter again at 0, so names handed out before come
	// again.
	EmptyDir

	// The member class. A seed draws it, and injects it, from a fourth
	// random stream, so that a seed whose plan lacks it runs the history
	// it ran before it existed.

	// Lag makes the ensemble member a client talks to fall behind the
	// leader for up to a session timeout (fakezk.Server.Lag): the
	// client's reads without a watch miss what other clients have
	// written since, until its own write, a sync, a watched read or a
	// notification catches the member up, a session event ends the lag,
	// or the server's scheduler catches it up part of the way. With the
	// class on, one crash-restart in two also starts the process's new
	// session on a lagging member (drawn on a stream of its own): a new
	// process has heard of nothing, so its member may not have applied
	// even what its predecessor wrote.
	Lag

	// ContextOutage is drawn by no plan: the seeds of a scenario with
	// OutageEnds that draw it (Plan.OutageEnds) inject it where an
	// actor's context drawn for it would have ended (Actor.CancelAfterSteps):
	// the world cuts the actor's client off for less than its session
	// timeout before the server applies what the client sent in that
	// step (its requests in flight applied or not, drawn), and the
	// context ends in the outage, 0 to 2 steps after the client sees it.
	// A caller's context that ends while its call waits for a reconnect:
	// a release whose delete the loss took, cut short.
	ContextOutage

	// The access class. A seed draws it, and injects it, from a fifth
	// random stream, so that a seed whose plan lacks it runs the history
	// it ran before it existed.

	// ACL has an operator set the ACL of a node under Scenario.ACL (a
	// zkCli setAcl) so that the clients may not even read it (one time in
	// two) or may only read it, for 1 ms to twice the session timeout;
	// then the operator puts the old ACL back, if the node is still the
	// one it changed. The end of the faults puts back every ACL still
	// changed. Meanwhile ZooKeeper refuses the clients' reads of the node
	// (NoAuth) or their writes, creates and deletes of its children, and,
	// once they may not read it, tells them of no change to it: their
	// watches there are withheld, never to fire.
	ACL

	// Blink is drawn by no plan: in the seeds that draw it (Plan.Blinks,
	// one in two with faults), a client that has just come back is, one
	// time in three, cut off again just after the server hands it its
	// first to third reply, before its continuation runs, for less than
	// its session timeout or (one blink in three) long enough to expire
	// it (blink.go).
	Blink
	// OperatorInCut, with Operator on, has an operator delete, one short
	// cut of a client in three, at an instant inside the cut, a leaf
	// under Scenario.Operator that the client's session owns, and one
	// time in two create it again (blink.go).
	OperatorInCut

	// RemoveWatch is drawn by no plan: in the seeds that draw it
	// (Plan.RemoveWatchRate, one in two with faults, on a stream of its
	// own; Scenario.NoRemoveWatches turns it off), another user of a
	// client's session (a recursive cache of the path stopping, code of
	// the user's own calling removeAllWatches) takes away the session's
	// watches on a path the session watches: a RemoveWatches of type Any
	// one time in two, Data or Children otherwise (Any on a path with a
	// persistent watch: see injectRemoveWatches), applied at once
	// (fakezk.Server.RemoveWatchesNow). Each watch it takes ends with
	// EventWatchRemoved (task.ErrWatchRemoved), which the recipes must
	// take for a wake-up, not for the end of what they wait for or hold.
	RemoveWatch

	numClasses
)

// firstProcess is the first class drawn from the plan's second stream,
// firstCounter the first drawn from its third.
const (
	firstProcess = CrashRestart
	firstCounter = Counters
	firstMember  = Lag
)

// CounterFaults are the counter classes: a scenario whose recipes name
// nodes with a directory's counter adds them (AllFaults|CounterFaults)
// and names the directories in Scenario.Counters.
var CounterFaults = Of(Counters, EmptyDir)

var classNames = [numClasses]string{"drop-unapplied", "drop-applied", "partition-short", "partition-long",
	"expire", "delay", "restart", "wipe", "clock-jump", "crash-restart", "operator", "pause",
	"counters", "empty-dir", "lag", "context-outage", "acl", "blink", "operator-in-cut",
	"remove-watches"}

func (c FaultClass) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return fmt.Sprintf("FaultClass(%d)", c)
}

// Classes lists every fault class, in order.
func Classes() []FaultClass {
	out := make([]FaultClass, numClasses)
	for i := range out {
		out[i] = FaultClass(i)
	}
	return out
}

// FaultSet is a set of fault classes.
type FaultSet uint32

// Of returns the set of the given classes.
func Of(cs ...FaultClass) FaultSet {
	var s FaultSet
	for _, c := range cs {
		s |= 1 << c
	}
	return s
}

// AllFaults is every class but Wipe, which destroys what most recipes
// promise to keep, and the counter classes (CounterFaults), which need
// the scenario's directories; a scenario that survives Wipe adds it:
// AllFaults|Of(Wipe).
// A scenario that allows CrashRestart must set Scenario.Restart, and one
// that allows Operator must set Scenario.Operator (RunSeed fails the seed
// as a setup failure otherwise); one without a workload to restart or
// nodes to name takes AllFaults &^ Of(CrashRestart, Operator).
var AllFaults = Of(DropUnapplied, DropApplied, PartitionShort, PartitionLong, Expire, Delay, Restart, ClockJump,
	CrashRestart, Operator, Pause, Lag)

// Has reports whether c is in s.
func (s FaultSet) Has(c FaultClass) bool { return s&(1<<c) != 0 }

func (s FaultSet) String() string {
	var parts []string
	for _, c := range Classes() {
		if s.Has(c) {
			parts = append(parts, c.String())
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// Faults says which fault classes a scenario allows; the seed picks which
// of them are on and at what rate (Plan).
type Faults struct {
	// Allow is the set the seed draws from. The zero value allows none: a
	// scenario without faults.
	Allow FaultSet
	// MaxRate bounds the chance, per scheduling step of the server and per
	// clock advance, that a fault is injected (default 0.02). The seed
	// draws the rate from [MaxRate/16, MaxRate].
	MaxRate float64
	// MaxWipes bounds the Wipe faults of one run (default 1).
	MaxWipes int
}

// Plan is what the seed chose: the classes on and the injection rates.
type Plan struct {
	On FaultSet
	// Rate is the chance per injection point of a fault of the network
	// and server classes (DropUnapplied .. ClockJump).
	Rate float64
	// ProcessRate is the chance per injection point of a fault of the
	// process and operator classes (CrashRestart, Operator, Pause), drawn
	// on a stream of their own.
	ProcessRate float64
	// CounterRate is the chance per injection point of a fault of the
	// counter classes (Counters, EmptyDir), drawn on a third stream.
	CounterRate float64
	// LagRate is the chance per injection point of a Lag, drawn on a
	// fourth stream.
	LagRate float64
	// Twin, if set, names two clients started with one executor seed
	// (Scenario.NoTwins).
	Twin *Twin
	// LagWatched: a lagging member answers watched reads from its view
	// too (Scenario.LagWatched). Only with the lag class.
	LagWatched bool
	// OutageEnds: contexts of the actors end in outages cut for them too
	// (Scenario.OutageEnds, ContextOutage).
	OutageEnds bool
	// Blinks: a client that comes back may be cut off again just after a
	// reply (Blink).
	Blinks bool
	// ACLRate is the chance per injection point of an ACL fault, drawn on
	// a fifth stream.
	ACLRate float64
	// SyncAfterReconnect: the executors send their sync after a
	// reconnect (Scenario.SyncAfterReconnect; one seed in four of
	// Explore's, SyncedSeed).
	SyncAfterReconnect bool
	// RemoveWatchRate is the chance per injection point of a
	// RemoveWatch fault, drawn on a stream of its own (0: the class is
	// off).
	RemoveWatchRate float64
}

func (p Plan) String() string {
	s := fmt.Sprintf("faults %s at rate %.4f", p.On, p.Rate)
	if p.ProcessRate > 0 {
		s += fmt.Sprintf(" (process and operator classes %.4f)", p.ProcessRate)
	}
	if p.CounterRate > 0 {
		s += fmt.Sprintf(" (counter classes %.4f)", p.CounterRate)
	}
	if p.LagRate > 0 {
		s += fmt.Sprintf(" (lag %.4f)", p.LagRate)
	}
	if p.ACLRate > 0 {
		s += fmt.Sprintf(" (acl %.4f)", p.ACLRate)
	}
	if p.RemoveWatchRate > 0 {
		s += fmt.Sprintf(" (remove-watches %.4f)", p.RemoveWatchRate)
	}
	if p.LagWatched {
		s += "; watched reads lag too"
	}
	if p.OutageEnds {
		s += "; contexts end in outages (context-outage)"
	}
	if p.Blinks {
		s += "; blinks after a reconnect"
	}
	if p.Twin != nil {
		s += fmt.Sprintf("; client %d a twin of client %d (one executor seed)", p.Twin.Client, p.Twin.Of)
	}
	if p.SyncAfterReconnect {
		s += "; executors sync after a reconnect"
	}
	return s
}

// drawPlan picks the plan of one seed: one seed in sixteen runs with no
// fault (a baseline the workload must pass too); the others switch each
// allowed class on with probability one half, at least one. The network
// and server classes are drawn from rng, the process and operator classes
// from prng, the counter classes from crng, Lag from lrng, ACL from arng,
// each with a rate of its own.
func drawPlan(f Faults, rng, prng, crng, lrng, arng *rand.Rand) Plan {
	if f.Allow == 0 || rng.IntN(16) == 0 {
		return Plan{}
	}
	maxRate := f.MaxRate
	if maxRate <= 0 {
		maxRate = 0.02
	}
	var allowed, pallowed, callowed []FaultClass
	for _, c := range Classes() {
		switch {
		case !f.Allow.Has(c):
		case c < firstProcess:
			allowed = append(allowed, c)
		case c < firstCounter:
			pallowed = append(pallowed, c)
		case c < firstMember:
			callowed = append(callowed, c)
		}
	}
	var p Plan
	if len(allowed) > 0 {
		for _, c := range allowed {
			if rng.IntN(2) == 0 {
				p.On |= Of(c)
			}
		}
		if p.On == 0 {
			p.On = Of(allowed[rng.IntN(len(allowed))])
		}
		p.Rate = maxRate / float64(int(1)<<rng.IntN(5))
	}
	if len(pallowed) > 0 {
		var on FaultSet
		for _, c := range pallowed {
			if prng.IntN(2) == 0 {
				on |= Of(c)
			}
		}
		if on == 0 && len(allowed) == 0 {
			on = Of(pallowed[prng.IntN(len(pallowed))])
		}
		if on != 0 {
			p.On |= on
			// A quarter of the other rate: each of these faults costs a
			// client seconds of its life (a pause lasts past the session
			// timeout, a crash starts its work over).
			p.ProcessRate = maxRate / 4 / float64(int(1)<<prng.IntN(5))
		}
	}
	if len(callowed) > 0 {
		var on FaultSet
		for _, c := range callowed {
			if crng.IntN(2) == 0 {
				on |= Of(c)
			}
		}
		if on == 0 && len(allowed)+len(pallowed) == 0 {
			on = Of(callowed[crng.IntN(len(callowed))])
		}
		if on != 0 {
			p.On |= on
			// A counter set near its maximum stays there until the
			// recipe resets it, and a directory is empty only now and
			// then: a few tries per simulated second are enough.
			p.CounterRate = maxRate / 4 / float64(int(1)<<crng.IntN(4))
		}
	}
	if f.Allow.Has(Lag) && lrng.IntN(2) == 0 {
		p.On |= Of(Lag)
		// A lag costs a client nothing but staleness: as often as the
		// network faults.
		p.LagRate = maxRate / float64(int(1)<<lrng.IntN(5))
	}
	if f.Allow.Has(ACL) && arng.IntN(2) == 0 {
		p.On |= Of(ACL)
		// An ACL changed stops a client's work on the node for up to
		// twice the session timeout, as a pause does: as rare.
		p.ACLRate = maxRate / 4 / float64(int(1)<<arng.IntN(4))
	}
	return p
}

// injector injects the faults of a plan into a world while active.
type injector struct {
	w        *World
	plan     Plan
	classes  []FaultClass // network and server classes on, drawn with rng
	pclasses []FaultClass // process and operator classes on, drawn with prng
	cclasses []FaultClass // counter classes on, drawn with crng
	rng      *rand.Rand
	prng     *rand.Rand
	crng     *rand.Rand
	lrng     *rand.Rand // Lag
	arng     *rand.Rand // ACL
	rwrng    *rand.Rand // RemoveWatch; nil: off
	rlrng    *rand.Rand // the lag of a restarted process's session; nil: none
	rclrng   *rand.Rand // the lag of a session back after a cut (reconnectLag); nil: none
	ocrng    *rand.Rand // OperatorInCut; nil: off
	oclrng   *rand.Rand // the lag of a session back after an outage's cut (outageLag); nil: none
	// rlConns are the Conns restartLag set a lag on before their start:
	// counted in fired only if their session started (firedCounts).
	rlConns  []*fakezk.Conn
	active   bool
	started  bool // the faults have started (Setup is over)
	maxWipes int
	upAt     time.Time // the server is down until then (Restart)
	fired    [numClasses]int
	log      []string // the faults injected, with the simulated time

	restart    func(i int) // Scenario.Restart, bound to the trial
	operator   []string    // Scenario.Operator
	counters   []string    // Scenario.Counters
	deleteOnly []string    // Scenario.OperatorDeleteOnly
	spare      []string    // Scenario.OperatorSpare
	writes     bool        // Scenario.OperatorWrites
	noWrites   []string    // Scenario.OperatorNoWrites
	orphan     int64       // the operator's session for ephemerals, while it lives
	aclPaths   []string    // Scenario.ACL
	acls       []*aclFault // the ACLs changed and not yet put back
	aclsBack   time.Time   // when the last of them went back (ACLsOpen)
	instAt     time.Time   // the instant of the clock the faults below were injected at
	instN      int         // faults injected at instAt
	until      time.Time   // no fault from this instant on (the phase's end); zero: no bound
}

// maxFaultsPerInstant bounds the faults injected at one instant of the
// clock. A fault's recovery (a new session, a cache read again) takes
// server steps at that same instant, each a chance of another fault: a
// plan of only expire and crash-restart at a high rate fed itself (cache
// seed 55387577310060 of 325fb14: 20,172 faults at 559 ms, until the
// world's bound of steps at one instant ended the seed as a livelock).
// Real faults take time. The bound is above what ordinary seeds reach
// (4,000 seeds of six scenarios: at most 26 at one instant, 8 or fewer
// in 99 %), so it changes no history but a storm's.
const maxFaultsPerInstant = 32

func newInjector(w *World, plan Plan, maxWipes int, rng, prng, crng, lrng, arng *rand.Rand) *injector {
	in := &injector{w: w, plan: plan, rng: rng, prng: prng, crng: crng, lrng: lrng, arng: arng, maxWipes: maxWipes}
	for _, c := range Classes() {
		switch {
		case !plan.On.Has(c):
		case c < firstProcess:
			in.classes = append(in.classes, c)
		case c < firstCounter:
			in.pclasses = append(in.pclasses, c)
		case c < firstMember:
			in.cclasses = append(in.cclasses, c)
		}
	}
	return in
}

// maybe injects one fault with the plan's probability and reports
// whether it drew one.
func (in *injector) maybe() bool {
	if !in.active {
		return false
	}
	now := in.w.Clock.Now()
	if !in.until.IsZero() && !now.Before(in.until) {
		// The phase is over, though Settle has not yet looked: a jump
		// inside a step (one World.Drive) moved the clock past its end.
		// More faults here would keep that Drive going: each jump fires
		// timers (the executors' re-reads of watched nodes) whose
		// requests make more server steps and so more draws.
		return false
	}
	if !now.Equal(in.instAt) {
		in.instAt, in.instN = now, 0
	} else if in.instN >= maxFaultsPerInstant {
		return false
	}
	if in.maybeInject() {
		in.instN++
		return true
	}
	return false
}

// maybeInject draws whether a fault comes now and injects it.
func (in *injector) maybeInject() bool {
	if len(in.classes) > 0 && in.rng.Float64() < in.plan.Rate {
		in.inject(in.classes[in.rng.IntN(len(in.classes))])
		return true
	}
	if len(in.pclasses) > 0 && in.prng.Float64() < in.plan.ProcessRate {
		in.injectProcess(in.pclasses[in.prng.IntN(len(in.pclasses))])
		return true
	}
	if len(in.cclasses) > 0 {
		// A directory is empty only now and then (between a busy
		// recipe's rounds): empty-dir looks for one nine times as often
		// as counters fires, at the cost of a node lookup.
		x := in.crng.Float64()
		switch {
		case x < in.plan.CounterRate && in.plan.On.Has(Counters):
			return in.injectCounter(Counters)
		case x < 9*in.plan.CounterRate && in.plan.On.Has(EmptyDir):
			return in.injectCounter(EmptyDir)
		}
	}
	if in.plan.LagRate > 0 && in.lrng.Float64() < in.plan.LagRate {
		return in.injectLag()
	}
	if in.plan.ACLRate > 0 && in.arng.Float64() < in.plan.ACLRate {
		return in.injectACL()
	}
	if in.rwrng != nil && in.rwrng.Float64() < in.plan.RemoveWatchRate {
		return in.injectRemoveWatches()
	}
	return false
}

// drawRemoveWatches draws, on a stream of its own, whether a seed with
// faults has the remove-watches class (one in two) and at what rate, and
// returns the stream its faults then draw from (nil: off).
func drawRemoveWatches(seed uint64, f Faults) (float64, *rand.Rand) {
	rng := rand.New(rand.NewPCG(seed, 0x524d_5741_5443_4821))
	if rng.IntN(2) != 0 {
		return 0, nil
	}
	maxRate := f.MaxRate
	if maxRate <= 0 {
		maxRate = 0.02
	}
	// A removal costs a client a read to set its watch again: a few per
	// simulated second.
	return maxRate / 4 / float64(int(1)<<rng.IntN(4)), rng
}

// injectRemoveWatches has another user of a connected client's session
// remove the session's watches on one of the paths it watches.
func (in *injector) injectRemoveWatches() bool {
	w, rng := in.w, in.rwrng
	if len(w.Conns) == 0 {
		return false
	}
	client := rng.IntN(len(w.Conns))
	c := w.Conns[client]
	paths, persistent := w.Server.WatchedPaths(c) // sorted; nil unless connected
	if len(paths) == 0 {
		return false
	}
	path := paths[rng.IntN(len(paths))]
	typ, name := task.WatcherAny, "any"
	switch x := rng.IntN(4); {
	case x < 2:
	case slices.Contains(persistent, path):
		// On 3.8 a removal of Data or Children takes that list's
		// registration of a persistent watch too, and the client, whose
		// watch it does not end, is never told: the watch goes on
		// without some of its events. Nothing a recipe can see or mend
		// (the executor, which every request of the session goes
		// through, could); only Any here.
	case x == 2:
		typ, name = task.WatcherData, "data"
	default:
		typ, name = task.WatcherChildren, "children"
	}
	held := w.Server.RemoveWatchesNow(c, path, typ)
	in.fired[RemoveWatch]++
	what := fmt.Sprintf("client %d %s %s", client, path, name)
	if !held {
		what += " (no registration at the server)"
	}
	in.note(RemoveWatch, client, 0, false, what)
	return true
}

// injectLag makes a connected client's member lag for up to a session
// timeout.
func (in *injector) injectLag() bool {
	w := in.w
	if len(w.Conns) == 0 {
		return false
	}
	client := in.lrng.IntN(len(w.Conns))
	c := w.Conns[client]
	if !c.Connected() {
		return false
	}
	d := time.Millisecond + time.Duration(in.lrng.Int64N(int64(w.timeout)))
	w.Server.Lag(c, d)
	in.fired[Lag]++
	in.note(Lag, client, d, false, fmt.Sprintf("client %d for %s", client, d))
	return true
}

func (in *injector) inject(c FaultClass) {
	w := in.w
	if len(w.Conns) == 0 && c != Restart && c != Wipe && c != ClockJump {
		return
	}
	client := in.rng.IntN(max(len(w.Conns), 1))
	tmo := w.timeout
	span := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(in.rng.Int64N(int64(hi-lo)+1)) }
	var what string
	var d time.Duration // how long it lasts, for the picture (timeline.go)
	alt := false        // drawn apart: requests in flight applied; a restart without quorum
	switch c {
	case DropUnapplied, DropApplied:
		if c == DropApplied {
			in.reconnectLag(client)
		}
		w.Server.Drop(w.Conns[client], c == DropApplied)
		what = fmt.Sprintf("client %d", client)
	case PartitionShort, PartitionLong:
		d = span(time.Millisecond, tmo*7/10)
		if c == PartitionLong {
			d = span(tmo*6/5, 3*tmo)
		}
		alt = in.rng.IntN(2) == 0
		if alt {
			in.reconnectLag(client)
		}
		w.Server.Partition(w.Conns[client], d, alt)
		what = fmt.Sprintf("client %d for %s applied=%v", client, d, alt)
		if c == PartitionShort {
			defer in.operatorInCut(client, d) // after the partition's note
		}
	case Expire:
		in.newSessionLag(client)
		w.Server.Expire(w.Conns[client])
		what = fmt.Sprintf("client %d", client)
	case Delay:
		d = span(time.Millisecond, time.Second)
		w.Server.Delay(w.Conns[client], d)
		what = fmt.Sprintf("client %d for %s", client, d)
	case Restart:
		if w.Clock.Now().Before(in.upAt) {
			return // already down
		}
		client = -1 // the server's
		d = span(0, 2*tmo)
		in.upAt = w.Clock.Now().Add(d)
		if in.rng.IntN(2) == 0 {
			w.Server.Restart(d)
			what = fmt.Sprintf("down %s", d)
		} else {
			// Up but serving no one: every handshake is refused, and a
			// client refused past its timeout waives its zxid.
			w.Server.LoseQuorum(d)
			what = fmt.Sprintf("no quorum for %s", d)
			alt = true
		}
	case Wipe:
		if in.fired[Wipe] >= in.maxWipes {
			return
		}
		client = -1
		w.Wipe()
	case ClockJump:
		d = span(100*time.Millisecond, 2*tmo)
		what = fmt.Sprintf("by %s", d)
		in.note(c, -1, d, false, what) // before: the jump fires timers that may log
		in.fired[c]++
		w.Jump(d)
		return
	}
	if c == DropApplied {
		alt = true
	}
	in.fired[c]++
	in.note(c, client, d, alt, what)
}

// note logs a fault injected now on client (-1: the server, or every
// client), lasting d, and records it on the timeline if the run draws one.
func (in *injector) note(c FaultClass, client int, d time.Duration, alt bool, what string) {
	// As fmt's "%d fault %s" writes it, then " "+what: made in a buffer
	// on the stack when it fits, one string.
	var buf [128]byte
	b := strconv.AppendInt(buf[:0], in.w.Clock.Now().Sub(fakezk.Epoch).Milliseconds(), 10)
	b = append(b, " fault "...)
	b = append(b, c.String()...)
	if what != "" {
		b = append(b, ' ')
		b = append(b, what...)
	}
	line := string(b)
	in.log = append(in.log, line)
	in.w.fault(c, client, d, alt, line)
}

// DelayNow is the Delay fault aimed by the scenario at a moment of its
// own choosing (a reply just handed to client i while a later one of the
// same flow's path is still to come, say): it holds client i's
// deliveries for d, those queued and those that arrive meanwhile, as the
// injector's Delay faults do, and notes it in the fault log as they are.
// It draws nothing from the seed's fault streams. It may be called from
// a reply's callback (the server delivers outside its lock). It does
// nothing, and returns false, unless the faults are on now and the
// seed's plan has the Delay class, or if d is not positive.
func (r *Trial) DelayNow(i int, d time.Duration) bool {
	in := r.inj
	if in == nil || !in.active || !in.plan.On.Has(Delay) || r.faultsOff || d <= 0 || i < 0 || i >= len(r.Conns) {
		return false
	}
	r.Server.Delay(r.Conns[i], d)
	in.fired[Delay]++
	in.note(Delay, i, d, false, fmt.Sprintf("client %d for %s (aimed by the scenario)", i, d))
	return true
}

// AimDelay is DelayNow with its draw made from rnd (a stream of the
// scenario's own): client i's deliveries held for 1 ms up to a second,
// as long as the injector's Delay faults hold them. It reports whether
// it held them (false: DelayNow refused).
func (r *Trial) AimDelay(rnd *rand.Rand, i int) bool {
	d := time.Millisecond + time.Duration(rnd.Int64N(int64(time.Second)))
	return r.DelayNow(i, d)
}

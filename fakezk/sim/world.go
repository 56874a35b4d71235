package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// ErrStuck is returned by Run when the flow has not ended and nothing is
// left to run: no work at the current instant and no timer pending, or the
// step bound was reached.
var ErrStuck = errors.New("sim: flow never ended")

// Config describes a world.
type Config struct {
	// Seed seeds the server's scheduler and every executor's randomness.
	Seed uint64
	// Clients is the number of clients (executors, each with a session).
	Clients int
	// Server configures the fake server; its Seed, Clock and Deterministic
	// fields are set by the world.
	Server fakezk.Config
	// SessionTimeout is every client's requested session timeout
	// (default 4s).
	SessionTimeout time.Duration
	// Wrap, if set, wraps client i's connection before its executor uses
	// it (to count or alter requests).
	Wrap func(i int, c *fakezk.Conn) task.Conn
	// MaxSteps bounds Settle's clock advances (default 200000).
	MaxSteps int
	// Root, if set, is every client's chroot (fakezk.ConnConfig.Root); the
	// world creates it before the clients connect (root.go).
	Root string
	// Twin, if set, starts client Twin.Client's executor with client
	// Twin.Of's seed: two processes drawing the same random numbers.
	Twin *Twin
	// InJobEnds, if set, has one in three of the contexts actors make with
	// CancelAfterSteps end inside a job of their client's executor
	// instead, the job that ends a flow (Actor.CancelAfterSteps): a
	// caller whose context ends while the executor hands its outcome over.
	// It observes every executor (executor.Config.Observer), which costs
	// a little on every request.
	InJobEnds bool
	// OutageEnds, if set, has one in three of the contexts actors make
	// with CancelAfterSteps end inside an outage the world cuts just after
	// their client sends a drawn request, in the faults phase of a
	// Scenario run (ContextOutage, Actor.CancelAfterSteps): a caller whose
	// context ends while its call waits for a reconnect, as a release
	// whose delete the loss took does.
	OutageEnds bool
	// Blinks, if set, has a client that comes back in the faults phase of
	// a Scenario run cut off again, one time in three, just after the
	// server hands it its first to third reply (Blink, blink.go).
	Blinks bool
	// ActorLag, if set, has one actor wake-up in four come late: an actor
	// whose wait could return (an outcome delivered, a channel closed)
	// runs only 1 to 8 steps later, while the executors and the server go
	// on, as a goroutine the scheduler runs late does. Its contexts end
	// only once it has run; a wait woken by its context's end may find an
	// outcome delivered meanwhile too, which the library's blocking calls
	// take first (so a seed replays). The draws come from a stream of
	// their own.
	ActorLag bool
	// SyncAfterReconnect leaves on the sync each executor sends ahead of
	// its requests after a reconnect (executor.Config.NoSyncAfterReconnect
	// says it is on by default). Off unless set: the simulation holds the
	// recipes and the flows it runs to settling their lost writes on their
	// own (a sync before the read), as they must on an executor that has
	// it off. Explore sets it in one seed in four (Scenario.SyncAfterReconnect).
	SyncAfterReconnect bool
	// RecheckWatches has Settle move the clock to the executors' re-reads
	// of watched nodes (task.Watch: each wait on a watch reads its node
	// again every twice the session timeout) as to any other timer. Off in
	// a World built by hand unless set: the re-reads are the clock's
	// background timers (fakezk.Clock.AfterFuncBackground), which fire
	// when time passes for something else but keep nothing going, so that
	// a Settle until no timer is left ends. Every Scenario's seeds turn it
	// on: a wait whose notification the server withheld may rest on them
	// alone.
	RecheckWatches bool

	timeline *timeline // where the world records the seed's picture (runTimeline), or nil
}

// World is a fake server with clients. It is not safe for concurrent use:
// everything runs on the goroutine that calls its methods.
type World struct {
	Seed   uint64
	Clock  *fakezk.Clock
	Server *fakezk.Server
	// Conns[i] and Execs[i] are client i's connection and executor.
	Conns []*fakezk.Conn
	Execs []*executor.Executor
	// Errs collects what the executors reported through OnError
	// (failed cleanups and unhandled forks), tagged with the client.
	Errs []error

	maxSteps  int
	timeout   time.Duration // every client's requested session timeout
	root      string        // every client's chroot ("" for none)
	twin      *Twin         // two clients with one executor seed, or nil
	wrap      func(i int, c *fakezk.Conn) task.Conn
	inj       *injector // the fault plan of a Scenario run, or nil
	stalled   bool      // Drive hit its bound at one instant
	procs     []proc    // per client: its process's incarnation and pauses
	jumps     []jump    // the clock jumps injected, in order
	jumpedNow bool      // a jump fired timers since Step last looked: it steps again
	operated  []touch   // the operator's deletes, in order
	aclSet    []touch   // the operator's ACL changes (the acl class), in order

	operatorSessions []int64 // sessions the Operator fault opened
	// sessionProc is the process of each session a client's executor
	// was Connected on (Scenario.OwnIncarnations).
	sessionProc map[int64]procID

	tl *timeline // the seed's picture being recorded, or nil (timeline.go)

	act *actors // goroutines run in lockstep (actors.go), or nil
	// inJob draws which CancelAfterSteps contexts end inside a job
	// (Config.InJobEnds), from a stream of its own; nil when off.
	inJob *rand.Rand
	// outage draws which CancelAfterSteps contexts end at a connection
	// loss (Config.OutageEnds), from a stream of its own; nil when off.
	outage *rand.Rand
	// aftermath draws the cuts of a client whose context an outage ended,
	// at one of the requests that follow (its caller's clean-up), from a
	// stream of its own; nil without Config.OutageEnds.
	aftermath *rand.Rand
	// blink draws the blinks (Config.Blinks), from a stream of its own;
	// nil when off. blinkAt[i] counts the replies client i waits for
	// before its blink (0: none).
	blink   *rand.Rand
	blinkAt []int
	// lag draws which actor wake-ups come late, and how late
	// (Config.ActorLag), from a stream of its own; nil when off.
	lag *rand.Rand
	// noSyncCut: the executors' sync after a reconnect is off
	// (!Config.SyncAfterReconnect).
	noSyncCut bool
}

// jump is one ClockJump: the clock moved from at by d at once.
type jump struct {
	at time.Time
	d  time.Duration
}

// Jump moves the clock on by d at once, as the ClockJump fault does: the
// timers due fire (the server's first: it expires sessions), and the
// clients run only when the world is driven next, so each was paused for
// d. Jumped counts it.
func (w *World) Jump(d time.Duration) {
	w.jumps = append(w.jumps, jump{at: w.Clock.Now(), d: d})
	w.jumpedNow = true
	w.Clock.Advance(d)
}

// Jumped returns how long the clock jumped (ClockJump faults: time that
// passed while no client ran) at instants in [from, to].
func (w *World) Jumped(from, to time.Time) time.Duration {
	var sum time.Duration
	for _, j := range w.jumps {
		if !j.at.Before(from) && !j.at.After(to) {
			sum += j.d
		}
	}
	return sum
}

// maxDrive bounds the steps Drive takes at one instant of the clock: a
// workload that loops without ever waiting for time is a livelock.
const maxDrive = 1 << 16

// New builds a world and runs it until idle, so every client is connected.
func New(cfg Config) (*World, error) {
	if cfg.Clients < 0 {
		return nil, errors.New("sim: negative number of clients")
	}
	w := &World{Seed: cfg.Seed, Clock: fakezk.NewClock(fakezk.Epoch), maxSteps: cfg.MaxSteps, wrap: cfg.Wrap, twin: cfg.Twin, tl: cfg.timeline, noSyncCut: !cfg.SyncAfterReconnect}
	w.Clock.CountBackground(cfg.RecheckWatches)
	if cfg.Root != "" && cfg.Root != "/" {
		if err := task.ValidatePath(cfg.Root, false); err != nil {
			return nil, fmt.Errorf("sim: root: %w", err)
		}
		w.root = cfg.Root
	}
	if cfg.SessionTimeout < 0 {
		return nil, errors.New("sim: negative session timeout")
	}
	if w.maxSteps <= 0 {
		w.maxSteps = 200000
	}
	timeout := cfg.SessionTimeout
	if timeout <= 0 {
		timeout = 4 * time.Second
	}
	w.timeout = timeout
	if cfg.InJobEnds {
		w.inJob = inJobStream(cfg.Seed)
	}
	if cfg.ActorLag {
		w.lag = rand.New(rand.NewPCG(cfg.Seed, 0x4143_544f_524c_4147))
	}
	if cfg.OutageEnds {
		w.outage = rand.New(rand.NewPCG(cfg.Seed, 0x4f55_5441_4745_454e))
		w.aftermath = rand.New(rand.NewPCG(cfg.Seed, 0x4146_5445_524d_4154))
	}
	if cfg.Blinks {
		w.blink = rand.New(rand.NewPCG(cfg.Seed, 0x424c_494e_4b43_5554))
		w.blinkAt = make([]int, cfg.Clients)
	}
	sc := cfg.Server
	sc.Seed, sc.Clock, sc.Deterministic = cfg.Seed, w.Clock, true
	w.Server = fakezk.New(sc)
	track(w.Server)
	if err := w.provisionRoot(); err != nil {
		w.Close()
		return nil, fmt.Errorf("sim: creating the root: %w", err)
	}
	w.procs = make([]proc, cfg.Clients)
	for i := range cfg.Clients {
		conn, ex, err := w.newClient(i)
		if err != nil {
			w.Close()
			return nil, err
		}
		w.Conns = append(w.Conns, conn)
		w.Execs = append(w.Execs, ex)
	}
	w.Drive()
	return w, nil
}

// inJobStream is the stream that draws which contexts end in a job
// (Config.InJobEnds).
func inJobStream(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x494e_4a4f_4245_4e44)) }

// newClient connects client i's process: a connection (wrapped by
// Config.Wrap) and an executor seeded from the world's seed and i (or the
// client it is a twin of: Config.Twin), so a process started again after
// a crash draws the same randomness.
func (w *World) newClient(i int) (*fakezk.Conn, *executor.Executor, error) {
	conn := w.Server.Connect(fakezk.ConnConfig{Timeout: w.timeout, Root: w.root})
	var tc task.Conn = conn
	if w.wrap != nil {
		tc = w.wrap(i, conn)
	}
	if w.blink != nil {
		tc = &blinkConn{Conn: tc, raw: conn, w: w, i: i}
		w.blinkAt[i] = 0
	}
	if w.outage != nil {
		tc = &outageConn{Conn: tc, w: w, i: i}
	}
	seedOf := i
	if w.twin != nil && w.twin.Client == i {
		seedOf = w.twin.Of
	}
	var obs *task.Observer
	if w.inJob != nil {
		obs = &task.Observer{OnFlowEnd: func(task.FlowDone) { w.flowEnded(i) }}
	}
	ex, err := executor.New(executor.Config{Conn: tc, Clock: w.Clock, Seed: w.Seed*31 + uint64(seedOf) + 1, Observer: obs,
		OnError:              func(err error) { w.Errs = append(w.Errs, &ClientError{Client: i, Err: err}) },
		NoSyncAfterReconnect: w.noSyncCut})
	if err == nil {
		track(ex)
		w.follow(i, ex)
		ex.Subscribe(func(ev task.Event) { w.sessionEvent(i, ev) })
		if w.outage != nil {
			ex.Subscribe(func(ev task.Event) {
				if ev.Type == task.EventNone && ev.State == task.StateSuspended {
					w.connLost(i)
				}
			})
		}
		if w.blink != nil {
			ex.Subscribe(func(ev task.Event) {
				if ev.Type == task.EventNone && ev.State == task.StateConnected {
					w.reconnected(i)
				}
			})
		}
	}
	return conn, ex, err
}

// Twin names two clients that share an executor seed: Client's executor
// is seeded as Of's.
type Twin struct{ Of, Client int }

// drawTwin draws, from a stream of its own, whether a seed's world has
// twins (one seed in four with two clients or more) and which.
func drawTwin(seed uint64, clients int) *Twin {
	if clients < 2 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, 0x5457_494e_5345_4544))
	if rng.IntN(4) != 0 {
		return nil
	}
	of := rng.IntN(clients)
	c := rng.IntN(clients - 1)
	if c >= of {
		c++
	}
	return &Twin{Of: of, Client: c}
}

// drawLagWatched draws, on a stream of its own, whether a seed whose plan
// has the lag class has watched reads lag too (Plan.LagWatched): one in
// two.
func drawLagWatched(seed uint64) bool {
	return rand.New(rand.NewPCG(seed, 0x4c41_4757_4154_4348)).IntN(2) == 0
}

// drawOutageEnds draws, on a stream of its own, whether a seed of a
// scenario with OutageEnds has contexts end in outages cut for them
// (Plan.OutageEnds): one in two.
func drawOutageEnds(seed uint64) bool {
	return rand.New(rand.NewPCG(seed, 0x4f55_5441_4745_5345)).IntN(2) == 0
}

// ClientError is an error reported by client Client's executor.
type ClientError struct {
	Client int
	Err    error
}

func (e *ClientError) Error() string {
	return "client " + strconv.Itoa(e.Client) + ": " + e.Err.Error()
}
func (e *ClientError) Unwrap() error { return e.Err }

// Close shuts every executor down and closes the server.
func (w *World) Close() {
	w.killActors(-1)
	for _, ex := range w.Execs {
		ex.Shutdown()
	}
	w.Server.Close()
}

// Step runs every executor and the server until each is idle once and
// says how much ran. Under a Scenario's fault plan, a fault may be
// injected before each of the server's scheduling steps.
func (w *World) Step() int {
	n := w.stepActors()
	for i, ex := range w.Execs {
		if i >= len(w.procs) || !w.procs[i].paused { // (clients a test appended are never paused)
			n += ex.RunUntilIdle()
		}
	}
	if w.inj == nil || !w.inj.active {
		if w.act != nil && len(w.act.cuts) > 0 {
			w.endCuts() // the faults stopped: they end as drawn
		}
		n += w.Server.RunUntilIdle()
		if n == 0 {
			n = w.idleActors()
		}
		return n
	}
	for {
		w.inj.maybe()
		if !w.Server.Step() {
			if n == 0 && w.jumpedNow {
				// A clock jump fired the timers due (an actor's late
				// wake-up among them): the world steps again at the new
				// instant before time moves on (seed 10927899352929 of
				// barrier/blocking: an actor whose wake-up the jump made
				// due ran only at the next timer, 0.4 s later).
				n = 1
			}
			w.jumpedNow = false
			if n == 0 {
				n = w.idleActors()
			}
			return n
		}
		n++
	}
}

// Drive runs until nothing is left to run at the current instant, or
// until it has taken 1<<16 steps at this instant (a flow that loops
// without waiting for time); Stalled then reports true.
func (w *World) Drive() {
	total := 0
	for {
		n := w.Step()
		if n == 0 {
			return
		}
		if total += n; total > maxDrive {
			w.stalled = true
			return
		}
	}
}

// Stalled reports whether Drive ever gave up at one instant because the
// flows kept running without time passing.
func (w *World) Stalled() bool { return w.stalled }

// Timeout returns the session timeout every client asks for.
func (w *World) Timeout() time.Duration { return w.timeout }

// Settle drives, advancing the clock to the next timer whenever idle,
// until done holds (true) or no timer is left or the step bound is reached
// (false).
func (w *World) Settle(done func() bool) bool {
	for range w.maxSteps {
		w.Drive()
		if done() {
			return true
		}
		if w.stalled {
			return false
		}
		if w.inj != nil && w.inj.maybe() {
			continue // run what the fault caused before time moves
		}
		if !w.Clock.AdvanceToNext() {
			return false
		}
	}
	return false
}

// Outcome is where a flow's result lands once it has ended.
type Outcome[T any] struct {
	V    T
	Err  error
	Done bool
}

// Submit starts t on client i.
func Submit[T any](w *World, i int, t task.Task[T]) *Outcome[T] {
	o := &Outcome[T]{}
	executor.Submit(w.Execs[i], t, func(v T, err error) { o.V, o.Err, o.Done = v, err, true })
	return o
}

// Run runs t on client i to its end; ErrStuck if it never ends.
func Run[T any](w *World, i int, t task.Task[T]) (T, error) {
	o := Submit(w, i, t)
	if !w.Settle(func() bool { return o.Done }) {
		var zero T
		return zero, ErrStuck
	}
	return o.V, o.Err
}

// Children lists dir's children on the server, sorted, read directly from
// the server's tree (no session, no watches). dir is a client's path (see
// Config.Root).
func (w *World) Children(dir string) []string {
	names, _ := w.Server.Children(w.ServerPath(dir))
	return names
}

// LowestOwned is, of dir's children that are ephemerals of client i's
// session, the one with the lowest sequence number (the server's ten
// digits ending its name), and how many there are: what a scenario aims
// an operator's delete at when one client has two contender nodes at
// once (Trial.OperatorDeleteNow). keep, if not nil, picks the names
// counted.
func (w *World) LowestOwned(dir string, i int, keep func(name string) bool) (string, int) {
	sess := w.Conns[i].SessionID()
	low, n := "", 0
	for _, k := range w.Children(dir) {
		if _, st, ok := w.NodeData(dir + "/" + k); !ok || st.EphemeralOwner != sess || len(k) < 10 || keep != nil && !keep(k) {
			continue
		}
		if n++; low == "" || k[len(k)-10:] < low[len(low)-10:] {
			low = k
		}
	}
	return low, n
}

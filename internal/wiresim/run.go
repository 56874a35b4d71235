package wiresim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/fakezk/wire"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter"
)

// Scenario is a recipe's workload run through the production path:
// Clients executors, each on a zkadapter.Conn (go-zookeeper over TCP on
// loopback) to one wire-served fakezk.Server on the real clock, under the
// faults of the seed's Plan.
//
// One seed goes through these phases: build the server and the clients
// and run Setup with no fault; start Client(i) on a goroutine of its own
// for every client and inject the Plan for Duration; stop the faults and
// wait, at most Recovery, until Live holds (every client called Progress
// since the faults stopped, by default); cancel the clients' context and
// wait for their goroutines; close the clients (their sessions end) and
// call Check. A violation reported with Errorf at any moment, Live not
// reached, or Check's error fails the seed.
type Scenario struct {
	// Name labels the scenario in reports ("wire-lock").
	Name string
	// Clients is the number of clients (default 3).
	Clients int
	// TickTime is the server's tick (default 25ms); SessionTimeout what
	// every client asks for (default 20 ticks, the most a server grants:
	// 500ms), negotiated into [2, 20] ticks. Shorter sessions run seeds
	// faster, but on a loaded machine a client starved for a session
	// timeout loses its session with no fault drawn, and storms of such
	// expiries can hold a run's progress past Recovery.
	TickTime, SessionTimeout time.Duration
	// Duration is how long the workload runs under faults (default
	// 300ms); Recovery bounds the wait for Live after (default 20s, real
	// time: it is reached in tens of milliseconds unless something is
	// wrong, and is long so that a loaded machine does not fail a seed).
	Duration, Recovery time.Duration
	// Faults are the classes the plan draws from; MaxFaults bounds the
	// faults of a seed (default 6).
	Faults    Classes
	MaxFaults int
	// Setup prepares the server (directories, counters) on client 0 before
	// the faults start. It must return within its context (20s).
	Setup func(r *Run, ctx context.Context) error
	// Client is client i's workload: it runs on a goroutine of its own,
	// with the blocking APIs on r.Execs[i], until ctx ends.
	Client func(r *Run, ctx context.Context, i int)
	// Live, if set, replaces the liveness condition (called on any
	// goroutine, after the faults stopped).
	Live func(r *Run) bool
	// Check judges the run once every client is closed.
	Check func(r *Run) error
	// NoRoot keeps every seed's clients at the server's root. Otherwise
	// the seeds sim.RootedSeed picks (one in four) run every client under
	// sim.ExploreRoot (zkadapter.Config.Root, ZooKeeper's chroot): read
	// the server's tree through Run.ServerPath.
	NoRoot bool
}

// setupTimeout bounds Setup, in real time: long, so that a loaded
// machine (or the race detector) does not fail a seed there.
const setupTimeout = 20 * time.Second

func (sc *Scenario) defaults() {
	if sc.Clients <= 0 {
		sc.Clients = 3
	}
	if sc.TickTime <= 0 {
		sc.TickTime = 25 * time.Millisecond
	}
	if sc.SessionTimeout <= 0 {
		sc.SessionTimeout = 20 * sc.TickTime
	}
	sc.SessionTimeout = fakezk.NegotiateTimeout(sc.SessionTimeout, sc.TickTime)
	if sc.Duration <= 0 {
		sc.Duration = 300 * time.Millisecond
	}
	if sc.Recovery <= 0 {
		sc.Recovery = 20 * time.Second
	}
	if sc.MaxFaults <= 0 {
		sc.MaxFaults = 6
	}
}

// Run is one seed's run of a scenario: the server, the clients and what
// the workload reports. Its methods are safe from any goroutine.
type Run struct {
	Seed uint64
	Plan Plan
	// Root is every client's chroot ("" for none).
	Root   string
	Server *fakezk.Server
	// Execs[i] is client i's executor, on Conns[i].
	Execs []*executor.Executor
	Conns []*zkadapter.Conn
	// Value is the scenario's own state for this seed: Setup sets it,
	// before any client starts; the seeds of a scenario run at once, so
	// nothing of one seed may live in the Scenario's closures.
	Value any

	sc     *Scenario
	clock  task.Clock
	start  time.Time
	links  links
	fired  [numClasses]atomic.Int64
	kick   chan struct{}
	ending chan struct{} // closed as the run ends: stalled reads return
	closed atomic.Bool

	mu         sync.Mutex
	violations []error
	log        []string
	rands      []*rand.Rand
	progress   []int
	after      []bool
	faultsOff  bool
	counts     map[string]int
}

// Count adds n to the seed's counter name (Result.Counts, summed in
// Stats): what a scenario exercised, to show that the faults bit and the
// judge had something to judge.
func (r *Run) Count(name string, n int) {
	r.mu.Lock()
	if r.counts == nil {
		r.counts = map[string]int{}
	}
	r.counts[name] += n
	r.mu.Unlock()
}

// ServerPath returns the server's path of a client's path p (below Root).
func (r *Run) ServerPath(p string) string {
	if r.Root == "" {
		return p
	}
	if p == "/" {
		return r.Root
	}
	return r.Root + p
}

// Rand returns client i's randomness, drawn from the seed. Use it only on
// client i's goroutine.
func (r *Run) Rand(i int) *rand.Rand { return r.rands[i] }

// Errorf records a safety violation: the seed fails. Reports made once
// the clients are being closed are ignored.
func (r *Run) Errorf(format string, args ...any) {
	if r.closed.Load() {
		return
	}
	err := fmt.Errorf(format, args...)
	r.mu.Lock()
	r.violations = append(r.violations, err)
	r.mu.Unlock()
	r.Logf("VIOLATION %v", err)
	r.wake()
}

// Logf adds a line to the seed's trace, with the real time since the
// server started in milliseconds.
func (r *Run) Logf(format string, args ...any) {
	line := fmt.Sprintf("%4d ", r.clock.Now().Sub(r.start).Milliseconds()) + fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.log = append(r.log, line)
	r.mu.Unlock()
}

// Progress records that client i completed a unit of work.
func (r *Run) Progress(i int) {
	r.mu.Lock()
	r.progress[i]++
	if r.faultsOff {
		r.after[i] = true
	}
	r.mu.Unlock()
	r.wake()
}

// timer returns a channel closed once d has passed on the run's clock,
// and the timer to stop.
func (r *Run) timer(d time.Duration) (<-chan struct{}, task.Timer) {
	up := make(chan struct{})
	return up, r.clock.AfterFunc(d, func() { close(up) })
}

// Sleep waits d on the server's clock, or until ctx ends (a client's
// think time: the work between two calls).
func (r *Run) Sleep(ctx context.Context, d time.Duration) {
	done, t := r.timer(d)
	select {
	case <-done:
	case <-ctx.Done():
		t.Stop()
	}
}

// Progressed returns how many units of work client i completed.
func (r *Run) Progressed(i int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.progress[i]
}

// FaultsOn reports whether the fault plan is still running.
func (r *Run) FaultsOn() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.faultsOff
}

// Wake makes the run look at Live again (a scenario whose Live depends on
// more than Progress calls it when that changes).
func (r *Run) Wake() { r.wake() }

func (r *Run) wake() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *Run) failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.violations) > 0
}

func (r *Run) countFired(c Class) { r.fired[c].Add(1) }

// Kind says why a seed failed.
type Kind uint8

const (
	// Safety: Errorf was called or Check failed.
	Safety Kind = iota + 1
	// Liveness: Live was not reached within Recovery, or a client's
	// goroutine did not return once its context ended.
	Liveness
	// SetupFailed: the server, a client's session or Setup failed.
	SetupFailed
)

func (k Kind) String() string {
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
	Err  error
	Kind Kind
	// Fired counts the faults injected per class.
	Fired [numClasses]int
	// Log is the seed's trace: the faults injected, the clients' session
	// events, what the workload logged; Trace the server's event log when
	// the seed ran traced.
	Log   []string
	Trace []string
	// Counts are the scenario's counters (Run.Count).
	Counts map[string]int
	// Wall is the real time the seed took.
	Wall time.Duration
}

// RunSeed runs one seed of sc. With trace set the server records its
// event log (Result.Trace). The seed fixes the plan of faults and the
// clients' randomness, not the interleaving of go-zookeeper's goroutines
// and the real clock's timers: running a seed again runs the same
// schedule, not the same history.
func RunSeed(sc Scenario, seed uint64, trace bool) Result {
	sc.defaults()
	began := time.Now()
	res := Result{Scenario: sc.Name, Seed: seed, Plan: drawPlan(&sc, seed)}
	clock := task.RealClock()
	r := &Run{Seed: seed, Plan: res.Plan, sc: &sc, clock: clock, start: clock.Now(), kick: make(chan struct{}, 1), ending: make(chan struct{}),
		progress: make([]int, sc.Clients), after: make([]bool, sc.Clients)}
	r.links.cur = make([]*cutConn, sc.Clients)
	if !sc.NoRoot && sim.RootedSeed(seed) {
		r.Root, res.Root = sim.ExploreRoot, sim.ExploreRoot
	}
	for i := range sc.Clients {
		r.rands = append(r.rands, rand.New(rand.NewPCG(seed, uint64(i)+0x434c_4945_4e54)))
	}
	err, kind := r.run(trace)
	if err == nil {
		r.mu.Lock()
		if len(r.violations) > 0 {
			err, kind = errors.Join(r.violations...), Safety
		}
		r.mu.Unlock()
	}
	res.Err, res.Kind = err, kind
	if err == nil {
		res.Kind = 0
	}
	for c := range numClasses {
		res.Fired[c] = int(r.fired[c].Load())
	}
	r.mu.Lock()
	res.Log, res.Counts = r.log, r.counts
	r.mu.Unlock()
	if trace && r.Server != nil {
		res.Trace = r.Server.Trace()
	}
	res.Wall = time.Since(began)
	return res
}

// run builds the world, runs the phases and tears everything down; it
// returns the failure that is not a violation (setup, liveness, Check).
func (r *Run) run(trace bool) (error, Kind) {
	sc := r.sc
	r.Server = fakezk.New(fakezk.Config{Seed: r.Seed, Clock: r.clock, TickTime: sc.TickTime, Trace: trace})
	defer r.Server.Close()
	ws := wire.New(r.Server, wire.Config{HandshakeTimeout: time.Second})
	var serving sync.WaitGroup
	defer func() { close(r.ending); ws.Close(); serving.Wait() }()
	if r.Root != "" { // the root and its ancestors, as an operator would
		for i := 1; i <= len(r.Root); i++ {
			if i == len(r.Root) || r.Root[i] == '/' {
				if err := r.Server.AdminCreate(r.Root[:i], nil, 0); err != nil && !errors.Is(err, task.ErrNodeExists) {
					return fmt.Errorf("root: %w", err), SetupFailed
				}
			}
		}
	}
	// Two listeners: go-zookeeper waits a second before it tries again
	// once it has tried every address since its last connection; with
	// two, a client whose link drops reconnects at once.
	var addrs []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("listen: %w", err), SetupFailed
		}
		addrs = append(addrs, l.Addr().String())
		serving.Add(1)
		go func() { defer serving.Done(); ws.Serve(&stallListener{Listener: l, r: r}) }()
	}
	runCtx, stopExecs := context.WithCancel(context.Background())
	var execs sync.WaitGroup
	defer func() {
		r.closed.Store(true)
		stopExecs()
		execs.Wait()
	}()
	for i := range sc.Clients {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := zkadapter.Dial(dctx, zkadapter.Config{Servers: addrs, Root: r.Root, SessionTimeout: sc.SessionTimeout,
			ConnectTimeout: 500 * time.Millisecond, Dialer: r.dialer(i)})
		cancel()
		if err != nil {
			return fmt.Errorf("client %d: %w", i, err), SetupFailed
		}
		var logger *slog.Logger
		if trace { // every operation's outcome, in the seed's trace
			logger = slog.New(&traceHandler{r: r, prefix: fmt.Sprintf("client %d: ", i)})
		}
		ex, err := executor.New(executor.Config{Conn: conn, Seed: r.Seed*31 + uint64(i) + 1, Logger: logger,
			OnError: func(err error) { r.Logf("client %d: reported: %v", i, err) },
			OnSession: func(ev task.Event, s task.Session) {
				r.Logf("client %d: session %#x: %v", i, s.ID, ev.State)
			}})
		if err != nil {
			conn.Close()
			return fmt.Errorf("client %d: %w", i, err), SetupFailed
		}
		r.Conns, r.Execs = append(r.Conns, conn), append(r.Execs, ex)
		execs.Add(1)
		go func() { defer execs.Done(); ex.Run(runCtx) }()
	}
	if sc.Setup != nil {
		sctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		err := sc.Setup(r, sctx)
		cancel()
		if err != nil {
			return fmt.Errorf("setup: %w", err), SetupFailed
		}
	}
	// The workload under the plan's faults.
	r.Logf("faults on: %v", r.Plan)
	inj := r.inject()
	cctx, stopClients := context.WithCancel(context.Background())
	var clients sync.WaitGroup
	for i := range sc.Clients {
		clients.Add(1)
		go func() { defer clients.Done(); sc.Client(r, cctx, i) }()
	}
	wait := func(d time.Duration, done func() bool) bool {
		up, t := r.timer(d)
		defer t.Stop()
		for !done() {
			select {
			case <-r.kick:
			case <-up:
				return done()
			}
		}
		return true
	}
	wait(sc.Duration, r.failed) // the faults' time (ends early on a violation)
	inj.stop()
	r.mu.Lock()
	r.faultsOff = true
	r.mu.Unlock()
	r.Logf("faults off")
	live := sc.Live
	if live == nil {
		live = func(r *Run) bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, a := range r.after {
				if !a {
					return false
				}
			}
			return true
		}
	}
	var fail error
	if !r.failed() && !wait(sc.Recovery, func() bool { return r.failed() || live(r) }) {
		r.mu.Lock()
		fail = fmt.Errorf("no progress within %s after the faults stopped (progress per client %v, since: %v)", sc.Recovery, r.progress, r.after)
		r.mu.Unlock()
		r.logTree()
	}
	r.Logf("stopping")
	stopClients()
	returned := make(chan struct{})
	go func() { clients.Wait(); close(returned) }()
	up, t := r.timer(sc.Recovery)
	select {
	case <-returned:
	case <-up:
		if fail == nil {
			fail = fmt.Errorf("a client's goroutine did not return within %s of its context's end", sc.Recovery)
		}
		r.closed.Store(true)
		stopExecs() // the blocking calls fail with task.ErrClosed
		<-returned
	}
	t.Stop()
	if fail != nil {
		return fail, Liveness
	}
	r.closed.Store(true)
	stopExecs()
	execs.Wait()
	if r.failed() {
		return nil, 0
	}
	if sc.Check != nil {
		if err := sc.Check(r); err != nil {
			return err, Safety
		}
	}
	return nil, 0
}

// injector runs a plan on the server's clock.
type injector struct {
	mu     sync.Mutex
	off    bool
	timers []task.Timer
	wg     sync.WaitGroup
}

func (r *Run) inject() *injector {
	inj := &injector{}
	for _, f := range r.Plan {
		inj.wg.Add(1)
		tm := r.clock.AfterFunc(f.At, func() {
			defer inj.wg.Done()
			inj.mu.Lock()
			defer inj.mu.Unlock()
			if !inj.off {
				r.apply(f)
			}
		})
		inj.timers = append(inj.timers, tm)
	}
	return inj
}

// stop cancels the faults not injected yet and waits for any being
// injected.
func (inj *injector) stop() {
	inj.mu.Lock()
	inj.off = true
	for _, t := range inj.timers {
		if t.Stop() {
			inj.wg.Done()
		}
	}
	inj.mu.Unlock()
	inj.wg.Wait()
}

// traceHandler writes an executor's log records, Debug included (every
// operation's outcome), to the run's trace.
type traceHandler struct {
	r      *Run
	prefix string
	attrs  []slog.Attr
}

func (h *traceHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *traceHandler) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.r.Logf("%s%s", h.prefix, b.String())
	return nil
}

func (h *traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &traceHandler{r: h.r, prefix: h.prefix, attrs: append(slices.Clip(h.attrs), as...)}
}

func (h *traceHandler) WithGroup(string) slog.Handler { return h }

// logTree logs the server's sessions and nodes (with their owners), for
// the report of a run that made no progress: what holds the workload up
// is usually a node someone left.
func (r *Run) logTree() {
	r.Logf("server at the failure: sessions %#x", r.Server.Sessions())
	for _, p := range r.Server.Paths() {
		if st, ok := r.Server.NodeStat(p); ok {
			r.Logf("server node %s version=%d owner=%#x", p, st.Version, st.EphemeralOwner)
		}
	}
}

// apply injects f, on the session client f.Client has now.
func (r *Run) apply(f Fault) {
	if f.Class == Restart {
		r.Logf("fault %v", f)
		r.Server.Restart(f.For)
		r.countFired(f.Class)
		return
	}
	if f.Class == StallRead || f.Class == Silence {
		if r.stall(f.Client, f.For, f.Class == Silence) {
			r.Logf("fault %v", f)
			r.countFired(f.Class)
		} else {
			r.Logf("fault %v skipped: no connection", f)
		}
		return
	}
	if f.Class == CutMidFrame || f.Class == CutAfterFrame {
		if r.arm(f.Client, f.Class) {
			r.Logf("fault %v (armed: at the client's next write)", f)
		} else {
			r.Logf("fault %v skipped: no connection", f)
		}
		return // counted when the write cuts (cutConn)
	}
	id := r.Conns[f.Client].SessionID()
	c := r.Server.SessionConn(id)
	if id == 0 || c == nil {
		r.Logf("fault %v skipped: no session", f)
		return
	}
	r.Logf("fault %v on session %#x", f, id)
	switch f.Class {
	case Drop:
		r.Server.Drop(c, false)
	case DropApplied:
		r.Server.Drop(c, true)
	case Partition, LongPartition:
		r.Server.Partition(c, f.For, f.Applied)
	case Expire:
		r.Server.Expire(c)
	case Delay:
		r.Server.Delay(c, f.For)
	}
	r.countFired(f.Class)
}

// Report formats a failed seed: what failed, the command that runs the
// seed again, the plan and the trace (its last tail lines; 0: all).
func Report(res Result, test string, tail int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s seed %d failed (%s): %v\n", res.Scenario, res.Seed, res.Kind, res.Err)
	fmt.Fprintf(&b, "run it again (the same schedule of faults and operations, not the same interleaving):\n")
	fmt.Fprintf(&b, "\tgo test ./internal/wiresim -run '^%s$/^%s$' -wiresim.seed=%d -v\n", strings.Split(test, "/")[0], res.Scenario, res.Seed)
	fmt.Fprintf(&b, "plan: %v\n", res.Plan)
	if res.Root != "" {
		fmt.Fprintf(&b, "every client under the root %s\n", res.Root)
	}
	lines := res.Log
	if tail > 0 && len(lines) > tail {
		fmt.Fprintf(&b, "trace (last %d of %d lines; -wiresim.tail=0 for all):\n", tail, len(lines))
		lines = lines[len(lines)-tail:]
	} else {
		fmt.Fprintf(&b, "trace:\n")
	}
	for _, l := range lines {
		b.WriteString("\t" + l + "\n")
	}
	if len(res.Trace) > 0 {
		fmt.Fprintf(&b, "server trace (%d lines):\n", len(res.Trace))
		tr := res.Trace
		if tail > 0 && len(tr) > tail {
			tr = tr[len(tr)-tail:]
		}
		for _, l := range tr {
			b.WriteString("\t" + l + "\n")
		}
	}
	return b.String()
}

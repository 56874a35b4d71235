package seqid_test

// Promises of the package's docs that adversarial reviews found broken,
// each with the schedule that broke it (they fail on the code before the
// fix), and some that held with no test of their own (each says which).

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// legacyDraw is what the doc calls a legacy service "that writes with the
// version it read" (Curator's DistributedAtomicLong, kazoo's Counter): get,
// add one, set with the version read. At version -1 that set is
// unconditional, as it is for those clients.
func legacyDraw(p string) task.Task[int64] {
	return c.Then(task.Get(p), func(d task.Data) task.Task[int64] {
		v, err := seqid.Decode(d.Data)
		if err != nil {
			return task.Fail[int64](err)
		}
		return c.Map(task.Set(p, seqid.Encode(v+1), d.Stat.Version), func(task.Stat) int64 { return v + 1 })
	})
}

// Package doc: "legacy services that write with the version they read can
// draw from the same sequence at once" and "No ID is handed out twice";
// Counter doc: "The safety argument is Next's: every ID is the value of a
// compare-and-set that succeeded, and the version is never -1."
//
// A Counter (and so a Client with blocks of 1) kept the version its last
// write left for as long as it lived, and wrote with it without reading.
// The node's data version is an int32: once the legacy writers have taken
// it round (up to -1, through their set with -1, and on from 0), the
// remembered version matches again and the Counter's compare-and-set
// succeeded, writing a value far below the node's and handing out IDs the
// legacy service had already drawn. SetCounters stands for the 2^32-13
// legacy writes of the wrap, and an hour of the clock for the time they
// take (at least that at any rate ZooKeeper reaches: the Counter's
// assumption, CounterFresh); every other write is a real request.
func TestCounterRememberedVersionAcrossWrap(t *testing.T) {
	w := newWorld(t, 1, 2, fakezk.Config{})
	w.create(path, seqid.Encode(0))
	ct, err := seqid.NewCounter(path)
	if err != nil {
		t.Fatal(err)
	}
	got := newIDs(t, 1)
	for range 5 { // the counter draws 1..5 and remembers version 5
		id, err := run(w, 0, ct.Next())
		if err != nil {
			t.Fatal(err)
		}
		got.add(0, id)
	}
	legacy := func() {
		t.Helper()
		id, err := run(w, 1, legacyDraw(path))
		if err != nil {
			t.Fatal(err)
		}
		got.add(1, id)
	}
	for range 5 { // legacy draws 6..10, version 10
		legacy()
	}
	// ... 2^32-13 more legacy writes: the version is at -3.
	if err := w.Server.SetCounters(path, -3, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := run(w, 1, c.Sleep(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for { // legacy draws on: -3, -2, -1 (any), 0, ... until version 5 again
		legacy()
		if st, _ := w.Server.NodeStat(path); st.Version == 5 {
			break
		}
	}
	before := w.value(path)
	id, err := run(w, 0, ct.Next())
	if err != nil {
		t.Fatal(err)
	}
	got.add(0, id) // fails the test if the ID was handed out already
	if after := w.value(path); after < before {
		t.Errorf("the counter's write took the node from %d back to %d (ID %d): the node is no longer above every ID handed out", before, after, id)
	}
}

// Client doc: "Its methods are safe for concurrent use from any
// goroutine." With blockSize 1, and with blocks while none is being
// reserved, a call on the executor's goroutine fails at once with
// executor.ErrOnExecutor (executor.Await). With blocks, while another
// goroutine reserves the next block, a call on the executor's goroutine
// waits for that reservation, which needs the very goroutine it blocks:
// the executor stops until the caller's ctx ends (forever with a ctx that
// never ends), and the other goroutine's reservation stops with it.
func TestClientNextOnExecutorWhileFilling(t *testing.T) {
	clk := fakezk.NewClock(fakezk.Epoch)
	srv := fakezk.New(fakezk.Config{Clock: clk})
	conn := srv.Connect(fakezk.ConnConfig{})
	sc := &signalConn{Conn: conn, sent: make(chan struct{})}
	ex, err := executor.New(executor.Config{Conn: sc, Clock: srv.Clock(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = ex.Run(runCtx) }()
	defer func() { stop(); <-ran }()
	if _, err := executor.Await(context.Background(), ex, task.Create("/warm", nil, task.Persistent)); err != nil {
		t.Fatal(err) // the session is up
	}

	g, err := seqid.NewClient(ex, path, 10)
	if err != nil {
		t.Fatal(err)
	}
	// Goroutine 1 reserves the first block; the server holds every reply
	// to the session for an hour of its (simulated, never advanced) clock.
	srv.Delay(conn, time.Hour)
	sc.armed.Store(true)
	fillCtx, cancelFill := context.WithCancel(context.Background())
	defer cancelFill()
	filled := make(chan error, 1)
	go func() {
		_, err := g.Next(fillCtx)
		filled <- err
	}()
	<-sc.sent // the reservation is under way (g.filling is set before its submit)

	// A flow on the executor calls Next. It must not wait on the executor
	// it blocks: ErrOnExecutor at once is what the other paths give.
	const bound = 2 * time.Second // only bounds the damage; the outcome does not depend on it
	onEx := make(chan error, 1)
	executor.Submit(ex, task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		_, err := g.Next(ctx)
		onEx <- err
		k(task.Unit{}, nil)
	}), nil)
	err = <-onEx
	if !errors.Is(err, executor.ErrOnExecutor) {
		t.Errorf("Next on the executor goroutine while another goroutine reserves: %v; want executor.ErrOnExecutor at once (the executor was blocked until the caller's ctx ended)", err)
	}
	cancelFill()
	<-filled
}

// signalConn closes sent when the first request goes out once armed.
type signalConn struct {
	*fakezk.Conn
	sent  chan struct{}
	armed atomic.Bool
	once  sync.Once
}

func (s *signalConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if s.armed.Load() {
		s.once.Do(func() { close(s.sent) })
	}
	s.Conn.Do(req, done, watch)
}

// Client.Next doc: "Next returns a new ID, or an error once ctx ends
// (task.ErrCanceled or task.ErrDeadlineExceeded, matching ctx's error
// under errors.Is)". TestGeneratorContext checks this for blockSize 1
// only. With blocks, a ctx that has ended before the call still gets an
// ID from the block in hand: the caller that has given up is handed an ID
// (blockSize 1 gives task.ErrCanceled, as executor.Await does).
func TestClientEndedContextWithBlockInHand(t *testing.T) {
	for _, size := range []int64{1, 10} {
		srv := fakezk.New(fakezk.Config{})
		ex, _ := running(t, srv)
		g, err := seqid.NewClient(ex, path+"-"+seqid.Hex(size), size)
		if err != nil {
			t.Fatal(err)
		}
		if id, err := g.Next(context.Background()); err != nil || id != 1 {
			t.Fatalf("size %d: first id %d, %v", size, id, err)
		}
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		if id, err := g.Next(ended); !errors.Is(err, context.Canceled) || !errors.Is(err, task.ErrCanceled) {
			t.Errorf("blockSize %d: Next with a ctx canceled before the call = %d, %v; want task.ErrCanceled", size, id, err)
		}
		past, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
		if id, err := g.Next(past); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, task.ErrDeadlineExceeded) {
			t.Errorf("blockSize %d: Next with a ctx past its deadline = %d, %v; want task.ErrDeadlineExceeded", size, id, err)
		}
		cancel2()
	}
}

// Package doc: "A version of the node wrapped to -1 is refused
// (ErrVersionWrapped) rather than used as "any version"." TestVersionWrap
// checks it for Next only; this checks the Counter's one-write path (its
// remembered version is the one its own last write left, -1 here) and the
// blocking Client with blocks of 1 (a Counter) and more, which the doc
// says fail with ErrVersionWrapped. Holds.
func TestVersionWrapCounterAndClient(t *testing.T) {
	w := newWorld(t, 1, 1, fakezk.Config{})
	w.create(path, seqid.Encode(100))
	if err := w.Server.SetCounters(path, -3, 0); err != nil {
		t.Fatal(err)
	}
	ct, _ := seqid.NewCounter(path)
	for i, want := range []int64{101, 102} { // versions -3 -> -2 -> -1
		if id, err := run(w, 0, ct.Next()); err != nil || id != want {
			t.Fatalf("draw %d: %d, %v, want %d", i, id, err, want)
		}
	}
	if id, err := run(w, 0, ct.Next()); !errors.Is(err, seqid.ErrVersionWrapped) {
		t.Fatalf("counter at version -1: %d, %v, want ErrVersionWrapped", id, err)
	}
	if st, _ := w.Server.NodeStat(path); st.Version != -1 || w.value(path) != 102 {
		t.Fatalf("node version %d value %d, want -1 and 102", st.Version, w.value(path))
	}

	srv := fakezk.New(fakezk.Config{})
	ex, _ := running(t, srv)
	if _, err := executor.Await(context.Background(), ex, task.Create(path, seqid.Encode(7), task.Persistent)); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetCounters(path, -1, 0); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int64{1, 10} {
		g, _ := seqid.NewClient(ex, path, size)
		if id, err := g.Next(context.Background()); !errors.Is(err, seqid.ErrVersionWrapped) {
			t.Errorf("Client blocks of %d at version -1: %d, %v, want ErrVersionWrapped", size, id, err)
		}
	}
}

// Package doc: "A round under way when the session expires fails with
// task.ErrSessionExpired". The round here is in its wait after a
// BadVersion (a timer, no request in flight) when the session expires.
// Holds; no existing test expires a session during the backoff wait.
func TestExpiryDuringBackoff(t *testing.T) {
	w := newWorld(t, 3, 1, fakezk.Config{})
	w.create(path, seqid.Encode(0))
	var id int64
	var err error
	done := false
	executor.Submit(w.Execs[0], seqid.Reserve(path, 5), func(b seqid.Block, e error) { id, err, done = b.Last, e, true })
	w.Execs[0].RunUntilIdle() // sends the get
	w.Server.RunUntilIdle()
	w.Execs[0].RunUntilIdle()                                // sends the set, version 0
	if err := w.Server.SetCounters(path, 9, 0); err != nil { // another writer: BadVersion
		t.Fatal(err)
	}
	w.Clock.Advance(40 * time.Millisecond) // the lost write's latency: the wait bound
	w.Server.RunUntilIdle()
	w.Execs[0].RunUntilIdle() // takes the BadVersion, starts the wait
	if n := w.Server.RunUntilIdle(); n != 0 {
		t.Fatalf("%d requests after the BadVersion: the round did not wait (pick another seed)", n)
	}
	if st, _ := w.Server.NodeStat(path); st.Version != 9 {
		t.Fatalf("version %d: the set was applied", st.Version)
	}
	w.Server.Expire(w.Conns[0])
	if !w.Settle(func() bool { return done }) {
		t.Fatal("the reservation never ended")
	}
	if !errors.Is(err, task.ErrSessionExpired) {
		t.Fatalf("expiry during the wait: %d, %v; want task.ErrSessionExpired", id, err)
	}
}

// Bad paths on the task faces other than Next (which TestNext checks):
// Reserve and an Allocator's Next end with task.ErrInvalidPath, sending
// nothing that creates a node. Holds.
func TestBadPathTaskFaces(t *testing.T) {
	for _, p := range []string{"no-slash", "/trailing/", "", "/a//b", "/a/./b"} {
		w := newWorld(t, 1, 1, fakezk.Config{})
		if _, err := run(w, 0, seqid.Reserve(p, 3)); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("Reserve(%q): %v, want ErrInvalidPath", p, err)
		}
		a, err := seqid.NewAllocator(p, 3)
		if err == nil {
			if _, err := run(w, 0, a.Next()); !errors.Is(err, task.ErrInvalidPath) {
				t.Errorf("Allocator(%q).Next: %v, want ErrInvalidPath", p, err)
			}
		} else if !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("NewAllocator(%q): %v", p, err)
		}
		for _, n := range w.Paths() {
			if n != "/" && !strings.HasPrefix(n, "/zookeeper") {
				t.Errorf("path %q: node %s created", p, n)
			}
		}
	}
}

// Counter doc: "when ... the write's outcome is unknown (connection loss)
// ... it falls back to Next's protocol, reading the node first". The
// one-write path's set is lost, applied or not: the ID it wrote is skipped
// when applied, handed out when not, never twice. TestConnectionLossOnSet
// checks only Next's round. Holds.
func TestCounterConnectionLossOnFastWrite(t *testing.T) {
	for _, applied := range []bool{true, false} {
		w := newWorld(t, 7, 1, fakezk.Config{})
		w.create(path, seqid.Encode(0))
		ct, _ := seqid.NewCounter(path)
		if id, err := run(w, 0, ct.Next()); err != nil || id != 1 {
			t.Fatalf("first id %d, %v", id, err)
		}
		var id int64
		var err error
		done := false
		executor.Submit(w.Execs[0], ct.Next(), func(v int64, e error) { id, err, done = v, e, true })
		w.Execs[0].RunUntilIdle() // sends the set with the remembered version, no read
		w.Server.Drop(w.Conns[0], applied)
		want := int64(2)
		if applied {
			want = 3
		}
		if !w.Settle(func() bool { return done }) || err != nil || id != want {
			t.Fatalf("applied=%v: id %d, %v, want %d", applied, id, err, want)
		}
		if v := w.value(path); v != want {
			t.Fatalf("applied=%v: node %d, want %d", applied, v, want)
		}
	}
}

// panics runs f and returns what it panicked with, or nil.
func panics(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// Client, Counter and Allocator docs: a value not made by its constructor
// (nil, or a zero value) is refused with an error matching
// task.ErrInvalidArgument (the convention of the project's recipes, and
// STYLE's "zero values that work"). A zero Client was refused already,
// but a nil *Client panicked in Next, the tasks of a nil *Counter's and
// a nil *Allocator's Next panicked on the executor goroutine when they
// ran (taking the executor down with them), and a nil *Allocator's
// Remaining panicked. Fails on the code before the fix.
func TestNilAndZeroValuesRefused(t *testing.T) {
	var zero seqid.Client
	if _, err := zero.Next(context.Background()); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("zero Client: Next: %v, want task.ErrInvalidArgument", err)
	}
	var g *seqid.Client
	if p := panics(func() {
		_, err := g.Next(context.Background())
		if !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("nil *Client: Next: %v, want task.ErrInvalidArgument", err)
		}
	}); p != nil {
		t.Errorf("nil *Client: Next panicked: %v; want an error matching task.ErrInvalidArgument", p)
	}
	var ct *seqid.Counter
	var al *seqid.Allocator
	for _, tc := range []struct {
		name string
		next func() task.Task[int64]
	}{
		{"nil *Counter", func() task.Task[int64] { return ct.Next() }},
		{"zero Counter", func() task.Task[int64] { return new(seqid.Counter).Next() }},
		{"nil *Allocator", func() task.Task[int64] { return al.Next() }},
		{"zero Allocator", func() task.Task[int64] { return new(seqid.Allocator).Next() }},
	} {
		w := newWorld(t, 1, 1, fakezk.Config{})
		if p := panics(func() {
			_, err := run(w, 0, tc.next())
			if !errors.Is(err, task.ErrInvalidArgument) {
				t.Errorf("%s: Next: %v, want task.ErrInvalidArgument", tc.name, err)
			}
		}); p != nil {
			t.Errorf("%s: Next's task panicked on the executor goroutine: %v; want an error matching task.ErrInvalidArgument", tc.name, p)
		}
	}
	if p := panics(func() {
		if n := al.Remaining(); n != 0 {
			t.Errorf("nil *Allocator: Remaining = %d, want 0", n)
		}
	}); p != nil {
		t.Errorf("nil *Allocator: Remaining panicked: %v; want 0", p)
	}
}

// PROTOCOL.md, Contention: "after the k-th BadVersion in a row a round
// waits a random time drawn uniformly from [0, L * 2^(k-1)), L being the
// latency of the write it lost (measured on the executor's clock ...),
// the bound at most 32 L and at most 50 ms". A lost write whose latency
// on the executor's clock was over 2^58 ns (9.2 years: a clock that jumps
// while the write is in flight) made L<<5 overflow: the bound turned
// negative, and the wait drawn was any uint64 taken as a Duration, up to
// 292 years, instead of at most 50 ms. Fails on the code before the fix.
func TestBackoffBoundHugeLatency(t *testing.T) {
	const year = 365 * 24 * time.Hour
	for _, rtt := range []time.Duration{10 * year, 100 * year} {
		for conflicts := 1; conflicts <= 8; conflicts++ {
			for _, u := range []uint64{1 << 40, 1 << 62, 12345678901234567} {
				if d := seqid.Backoff(rtt, conflicts, u); d < 0 || d >= 50*time.Millisecond {
					t.Errorf("lost write of %s, conflict %d, draw %d: wait %s, want in [0, 50ms)", rtt, conflicts, u, d)
				}
			}
		}
	}
}

// The same promise through Reserve: an executor on a clock of its own
// that jumps ten years while each write of the round is in flight (the
// server's clock, and so the session, does not move). After the sixth
// BadVersion in a row the round waited far past 50 ms: no request
// reached the server for a day of the executor's clock. Fails on the
// code before the fix.
func TestBackoffJumpingClockRoundGoesOn(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Deterministic: true})
	exClock := fakezk.NewClock(fakezk.Epoch)
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: exClock, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	settle := func() {
		for ex.RunUntilIdle()+srv.RunUntilIdle() > 0 {
		}
	}
	created := false
	executor.Submit(ex, task.Create(path, seqid.Encode(0), task.Persistent), func(string, error) { created = true })
	settle()
	if !created {
		t.Fatal("create never ended")
	}
	done := false
	var rerr error
	executor.Submit(ex, seqid.Reserve(path, 5), func(_ seqid.Block, err error) { done, rerr = true, err })
	for k := 1; k <= 6; k++ {
		ex.RunUntilIdle() // sends the get (after the wait drawn, the clock moved below)
		if srv.RunUntilIdle() == 0 {
			t.Fatalf("conflict %d: the round sent no get", k)
		}
		ex.RunUntilIdle() // sends the set
		st, _ := srv.NodeStat(path)
		if err := srv.SetCounters(path, st.Version+1, 0); err != nil { // another writer: BadVersion
			t.Fatal(err)
		}
		exClock.Advance(10 * 365 * 24 * time.Hour) // the write's latency on the executor's clock
		srv.RunUntilIdle()
		ex.RunUntilIdle() // takes the BadVersion, starts the wait
		if done {
			t.Fatalf("conflict %d: the reservation ended: %v", k, rerr)
		}
		if k < 6 {
			exClock.Advance(50 * time.Millisecond) // the wait is at most 50 ms
		}
	}
	exClock.Advance(24 * time.Hour)
	ex.RunUntilIdle()
	if n := srv.RunUntilIdle(); n == 0 {
		t.Errorf("after the sixth BadVersion in a row (each write taking 10 years on the executor's clock), the round sent nothing for a day: the wait is not bounded by 50 ms")
	}
}

// Client doc: "Next returns a new ID, or an error once ctx ends ..., the
// executor closes, or the recipe fails ... When the session expires during
// a call, Next tries again on the next session". Two Clients (blocks of 4,
// and of 1: a Counter), two goroutines each, under every fault class but
// the operator's: a call whose ctx is live and whose process is not
// closing never returns an error. The blocking scenario
// (blocking_sim_test.go) lets retryable errors and task.ErrSessionExpired
// pass; this does not. Holds (150 seeds).
func TestClientLiveContextNoErrorUnderFaults(t *testing.T) {
	start := func(r *sim.Trial, i int) {
		size := int64(4)
		if i == 1 {
			size = 1
		}
		g, err := seqid.NewClient(r.Execs[i], "/rseq", size)
		if err != nil {
			r.Errorf("client %d: %v", i, err)
			return
		}
		for range 2 {
			r.Go(i, func(a *sim.Actor) {
				for !r.Stopping() && a.Context().Err() == nil {
					_, err := g.Next(a.Context())
					if err == nil {
						r.Progress(i)
					} else if !r.Closing() && a.Context().Err() == nil {
						r.Errorf("client %d: Next with a live context: %v", i, err)
					}
					_ = a.Sleep(a.Context(), 10*time.Millisecond)
				}
			})
		}
	}
	seeds := 150
	if testing.Short() {
		seeds = 30
	}
	sim.Check(t, sim.Scenario{
		Name:     "seqid/live-ctx",
		Clients:  2,
		Faults:   sim.Faults{Allow: sim.AllFaults &^ sim.Of(sim.Operator)},
		Duration: 10 * time.Second,
		Workload: func(r *sim.Trial) {
			for i := range 2 {
				start(r, i)
			}
		},
		Restart: start,
		Quiesce: func(r *sim.Trial) bool { return r.Actors() == 0 },
	}, seeds)
}

// setHook calls onSet once the first set passes to the connection after
// armed is set (inside the executor's job that sends it).
type setHook struct {
	*fakezk.Conn
	armed bool
	onSet func()
}

func (h *setHook) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	h.Conn.Do(req, done, watch)
	if _, ok := req.(*task.SetDataRequest); ok && h.armed {
		h.armed = false
		h.onSet()
	}
}

// NewClient doc: "with more, IDs come from blocks of blockSize reserved
// one at a time (a gap of at most blockSize-1 per generator that stops)";
// package doc: gaps are IDs "whose write may have been applied but whose
// reply was lost, or that a process reserved and then crashed holding".
// A caller whose ctx ended while its reservation's compare-and-set was in
// flight got task.ErrCanceled and its reservation was canceled: the
// server applied the write all the same (it was sent) and replied, and
// the reply, not lost, was dropped with the block. The generator,
// stopping after two IDs of its next block, left a gap of 18 with blocks
// of 10: each caller that gave up during a fill burned a whole block.
// Now the reservation runs on and the next caller takes the block's IDs.
// Fails on the code before the fix.
func TestClientCanceledFillKeepsBlock(t *testing.T) {
	const size = 10
	var hook *setHook
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1, Wrap: func(i int, c *fakezk.Conn) task.Conn {
		hook = &setHook{Conn: c}
		return hook
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := sim.Run(w, 0, task.Create(path, seqid.Encode(0), task.Persistent)); err != nil {
		t.Fatal(err)
	}
	g, err := seqid.NewClient(w.Execs[0], path, size)
	if err != nil {
		t.Fatal(err)
	}
	var err1 error
	done1 := false
	w.Go(0, func(a *sim.Actor) {
		ctx, cancel := a.WithCancel(a.Context())
		defer cancel()
		hook.onSet = func() { w.Interrupt(a, cancel) } // the caller gives up as the write goes out
		hook.armed = true
		_, err1 = g.Next(ctx)
		done1 = true
	})
	if !w.Settle(func() bool { return done1 }) {
		t.Fatal("the first call never ended")
	}
	if !errors.Is(err1, task.ErrCanceled) {
		t.Fatalf("first call: %v, want task.ErrCanceled (the test's schedule did not happen)", err1)
	}
	w.Drive()
	if d, _, _ := w.NodeData(path); len(d) < 8 || d[7] != size {
		t.Fatalf("node % x after the first call, want %d: the canceled write was not applied (schedule)", d, size)
	}
	var ids []int64
	done2 := false
	w.Go(0, func(a *sim.Actor) {
		for range 2 {
			id, err := g.Next(a.Context())
			if err != nil {
				t.Errorf("second caller: %v", err)
				break
			}
			ids = append(ids, id)
		}
		done2 = true
	})
	if !w.Settle(func() bool { return done2 }) {
		t.Fatal("the second caller never ended")
	}
	d, _, _ := w.NodeData(path)
	v, _ := seqid.Decode(d)
	// The generator stops here: it reserved 1..v and handed out ids.
	if gap := v - int64(len(ids)); gap > size-1 {
		t.Errorf("the generator reserved 1..%d and handed out %v: a gap of %d, over blockSize-1 = %d (the first block, written and replied to, was thrown away when its caller gave up)", v, ids, gap, size-1)
	}
	if len(ids) != 2 || ids[0] != 1 || ids[1] != 2 {
		t.Errorf("second caller got %v, want [1 2]: the first block's IDs", ids)
	}
}

// Counter doc: "Its next ID is then one write with that version ... for
// as long as nobody else writes the node; when someone has (BadVersion)
// ... it falls back to Next's protocol, reading the node first"; package
// doc: "A version of the node wrapped to -1 is refused (ErrVersionWrapped)".
// The Counter's own write takes the version to -1; a legacy writer (the
// doc's "write with the version they read": at -1 its set is
// unconditional) draws the next ID and takes the version on to 0. The
// node is usable again (Next draws from it), but the Counter refused from
// what it remembered, without reading: ErrVersionWrapped for a node whose
// version is 0, where Next's protocol hands out an ID. Fails on the code
// before the fix.
func TestCounterReadsAfterOwnWriteToMinusOne(t *testing.T) {
	w := newWorld(t, 1, 2, fakezk.Config{})
	w.create(path, seqid.Encode(100))
	if err := w.Server.SetCounters(path, -3, 0); err != nil {
		t.Fatal(err)
	}
	ct, _ := seqid.NewCounter(path)
	for range 2 { // versions -3 -> -2 -> -1: IDs 101, 102
		if _, err := run(w, 0, ct.Next()); err != nil {
			t.Fatal(err)
		}
	}
	if id, err := run(w, 1, legacyDraw(path)); err != nil || id != 103 {
		t.Fatalf("legacy draw: %d, %v", id, err)
	}
	if st, _ := w.Server.NodeStat(path); st.Version != 0 {
		t.Fatalf("version %d after the legacy draw, want 0", st.Version)
	}
	if id, err := run(w, 0, ct.Next()); err != nil || id != 104 {
		t.Errorf("Counter.Next on a node at version 0 (its own last write left -1, another client wrote since): %d, %v; want 104, as Next's protocol gives", id, err)
	}
}

// Refused by the node's ACL: a node nobody may read, and one nobody may
// write. Every face (Next, Reserve, a Counter, an Allocator, the Client
// with blocks of 1 and of 10) fails at once with task.ErrNoAuth and leaves
// the node as it was, never waits or loops. Holds; no other test sets an
// ACL that refuses the recipe.
func TestACLRefusesEveryFace(t *testing.T) {
	for _, perms := range []int32{task.PermAll &^ task.PermRead, task.PermAll &^ task.PermWrite} {
		w := newWorld(t, 1, 1, fakezk.Config{})
		w.create(path, seqid.Encode(41))
		if err := w.Server.AdminSetACL(path, []task.ACL{{Perms: perms, Scheme: "world", ID: "anyone"}}); err != nil {
			t.Fatal(err)
		}
		ct, _ := seqid.NewCounter(path)
		al, _ := seqid.NewAllocator(path, 10)
		for name, next := range map[string]task.Task[int64]{
			"Next":      seqid.Next(path),
			"Reserve":   c.Map(seqid.Reserve(path, 3), func(b seqid.Block) int64 { return b.Last }),
			"Counter":   ct.Next(),
			"Allocator": al.Next(),
		} {
			if id, err := run(w, 0, next); !errors.Is(err, task.ErrNoAuth) {
				t.Errorf("perms %#x: %s: %d, %v; want task.ErrNoAuth", perms, name, id, err)
			}
		}
		if d, _, _ := w.NodeData(path); len(d) != 8 || d[7] != 41 {
			t.Errorf("perms %#x: node % x, want 41 untouched", perms, d)
		}
	}
	srv := fakezk.New(fakezk.Config{})
	ex, _ := running(t, srv)
	if _, err := executor.Await(context.Background(), ex, task.Create(path, seqid.Encode(41), task.Persistent)); err != nil {
		t.Fatal(err)
	}
	if err := srv.AdminSetACL(path, []task.ACL{{Perms: task.PermAll &^ task.PermWrite, Scheme: "world", ID: "anyone"}}); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int64{1, 10} {
		g, _ := seqid.NewClient(ex, path, size)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds a hang only
		if id, err := g.Next(ctx); !errors.Is(err, task.ErrNoAuth) {
			t.Errorf("Client blocks of %d: %d, %v; want task.ErrNoAuth", size, id, err)
		}
		cancel()
	}
}

// Client doc: "With a ctx that has ended it fails at once (an ID of the
// block in hand stays for a later call)". TestClientEndedContextWithBlockInHand
// checks the error only; this checks that the ID stays: the next call
// with a live ctx gets it. Holds.
func TestClientEndedContextKeepsID(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	ex, _ := running(t, srv)
	g, _ := seqid.NewClient(ex, path, 10)
	if id, err := g.Next(context.Background()); err != nil || id != 1 {
		t.Fatalf("first: %d, %v", id, err)
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for range 3 {
		if _, err := g.Next(ended); !errors.Is(err, task.ErrCanceled) {
			t.Fatalf("ended ctx: %v", err)
		}
	}
	if id, err := g.Next(context.Background()); err != nil || id != 2 {
		t.Errorf("after three calls with an ended ctx: %d, %v; want 2 (the IDs of the block stay)", id, err)
	}
}

// Client doc (since the fix above): "a call whose ctx ends while it
// reserves the next block returns at once and leaves the reservation
// running ... (a failure nobody waits for goes to the executor's
// Config.OnError)". The caller gives up as the reservation's write goes
// out; the node refuses the write (no WRITE permission): the failure is
// reported, not dropped, and the next call, with a live ctx, reserves
// again and gets it itself. New with the fix.
func TestClientCanceledFillFailureReported(t *testing.T) {
	var hook *setHook
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1, Wrap: func(i int, c *fakezk.Conn) task.Conn {
		hook = &setHook{Conn: c}
		return hook
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := sim.Run(w, 0, task.Create(path, seqid.Encode(0), task.Persistent)); err != nil {
		t.Fatal(err)
	}
	if err := w.Server.AdminSetACL(path, []task.ACL{{Perms: task.PermAll &^ task.PermWrite, Scheme: "world", ID: "anyone"}}); err != nil {
		t.Fatal(err)
	}
	g, err := seqid.NewClient(w.Execs[0], path, 10)
	if err != nil {
		t.Fatal(err)
	}
	var err1 error
	done1 := false
	w.Go(0, func(a *sim.Actor) {
		ctx, cancel := a.WithCancel(a.Context())
		defer cancel()
		hook.onSet = func() { w.Interrupt(a, cancel) } // the caller gives up as the write goes out
		hook.armed = true
		_, err1 = g.Next(ctx)
		done1 = true
	})
	if !w.Settle(func() bool { return done1 }) {
		t.Fatal("the first call never ended")
	}
	if !errors.Is(err1, task.ErrCanceled) {
		t.Fatalf("first call: %v, want task.ErrCanceled (the test's schedule did not happen)", err1)
	}
	w.Drive()
	if len(w.Errs) != 1 || !errors.Is(w.Errs[0], task.ErrNoAuth) {
		t.Errorf("reported through OnError: %v; want the reservation's task.ErrNoAuth, once", w.Errs)
	}
	var err2 error
	done2 := false
	w.Go(0, func(a *sim.Actor) {
		_, err2 = g.Next(a.Context())
		done2 = true
	})
	if !w.Settle(func() bool { return done2 }) {
		t.Fatal("the second call never ended")
	}
	if !errors.Is(err2, task.ErrNoAuth) {
		t.Errorf("second call: %v, want task.ErrNoAuth (its own reservation's)", err2)
	}
	if len(w.Errs) > 1 {
		t.Errorf("reported through OnError: %v; the second failure had a caller to tell", w.Errs)
	}
}

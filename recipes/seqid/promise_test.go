package seqid_test

// Promises of the package's docs that an adversarial review found broken,
// each with the schedule that broke it (they fail on the code before the
// fix), and four that held with no test of their own.

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

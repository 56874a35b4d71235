package semaphore_test

// Promises of the package's docs tried by an adversarial review that held;
// each checks what no other test of the package does.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/task"
)

// leaseDeleteHolder holds, unsent, the first delete of a node under
// PATH/leases; held is closed once it holds it.
type leaseDeleteHolder struct {
	*fakezk.Conn
	under string
	once  sync.Once
	held  chan struct{}
}

func (c *leaseDeleteHolder) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if r, ok := req.(*task.DeleteRequest); ok && strings.HasPrefix(r.Path, c.under) {
		holding := false
		c.once.Do(func() { holding = true; close(c.held) })
		if holding {
			return
		}
	}
	c.Conn.Do(req, done, watch)
}

// Client: "Its methods are safe from any goroutine and need someone
// running the executor"; Release: "The release is always started,
// whatever ctx: if ctx has ended ... the release goes on in the
// background (... this Client's next acquire waits for that)". The
// executor stops while such a Release's delete is still unanswered (held
// here): every blocking method called after that returns task.ErrClosed
// at once, none waits for the count of the delete that ended with the
// executor, and a Release with an ended ctx returns that ctx's error.
// Real goroutines; the 10s context is only a failure bound.
func TestCallsAfterTheExecutorStopped(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	conn := &leaseDeleteHolder{Conn: srv.Connect(fakezk.ConnConfig{}), under: "/review/stopped/leases/", held: make(chan struct{})}
	ex, err := executor.New(executor.Config{Conn: conn, Clock: srv.Clock(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	run, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = ex.Run(run) }()
	defer func() { stop(); <-ran }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := semaphore.NewClient(ex, "/review/stopped", 2)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := cl.AcquireMany(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	ended, end := context.WithCancel(ctx)
	end()
	if err := cl.Release(ended, ls[0]); !errors.Is(err, task.ErrCanceled) {
		t.Fatalf("Release with an ended ctx = %v", err)
	}
	select {
	case <-conn.held: // the Release's delete is held: it goes on in the background
	case <-ctx.Done():
		t.Fatal("the delete was never sent")
	}
	stop()
	<-ran
	calls := []struct {
		name string
		f    func() error
	}{
		{"Acquire", func() error { _, err := cl.Acquire(ctx); return err }},
		{"TryAcquire", func() error { _, err := cl.TryAcquire(ctx); return err }},
		{"AcquireMany", func() error { _, err := cl.AcquireMany(ctx, 1); return err }},
		{"Fenced", func() error {
			_, err := cl.Fenced(ctx, ls[1], &task.CreateRequest{Path: "/review/x", Mode: task.Persistent})
			return err
		}},
		{"Release", func() error { return cl.Release(ctx, ls[1]) }},
	}
	for _, c := range calls {
		if err := c.f(); !errors.Is(err, task.ErrClosed) {
			t.Errorf("%s after the executor stopped = %v, want task.ErrClosed", c.name, err)
		}
	}
	if err := cl.Release(ended, ls[1]); !errors.Is(err, task.ErrCanceled) && !errors.Is(err, task.ErrClosed) {
		t.Errorf("Release with an ended ctx after the executor stopped = %v, want its ctx's error or ErrClosed", err)
	}
	if _, err := cl.AcquireMany(ctx, 3); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("AcquireMany(3) of 2 after the executor stopped = %v, want task.ErrInvalidArgument", err)
	}
}

// Semaphore.Acquire: "It fails ... with task.ErrSessionExpired when the
// session ends (the nodes went with it)"; Client.Acquire waits "until
// ctx ends". No other test expires a waiter's session: n = 1, client 1
// holds; on client 0 one acquirer waits for a lease (holding the
// internal lock), a second waits for the internal lock, and a Client's
// Acquire waits behind them. The session expires: all three fail with
// task.ErrSessionExpired, none of client 0's nodes is left, and after
// the holder's release a new acquire on client 0 (a new session) holds.
func TestWaitersFailOnExpiry(t *testing.T) {
	w, _ := newWorld(t, 54, 2)
	m := mustSem(t, "/s", 1)
	held, err := mustRun(t, w, 1, m.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	first := sim.Submit(w, 0, m.Acquire())
	w.Drive()
	second := sim.Submit(w, 0, m.Acquire())
	w.Drive()
	cl, err := semaphore.NewClient(w.Execs[0], "/s", 1)
	if err != nil {
		t.Fatal(err)
	}
	var clErr error
	clDone := false
	w.Go(0, func(a *sim.Actor) {
		_, clErr = cl.Acquire(a.Context())
		clDone = true
	})
	w.Settle(func() bool { return len(w.Children("/s/locks")) == 3 })
	if n := len(w.Children("/s/locks")); n != 3 || first.Done || second.Done || clDone {
		t.Fatalf("setup: %d lock nodes, %+v %+v %v", n, first, second, clErr)
	}
	w.Server.Expire(w.Conns[0])
	if !w.Settle(func() bool { return first.Done && second.Done && clDone }) {
		t.Fatalf("the waiters never ended: %+v %+v %v", first, second, clDone)
	}
	for i, err := range []error{first.Err, second.Err, clErr} {
		if !errors.Is(err, task.ErrSessionExpired) {
			t.Errorf("waiter %d across an expiry = %v, want task.ErrSessionExpired", i, err)
		}
	}
	if ls, lk := w.Children("/s/leases"), w.Children("/s/locks"); len(ls) != 1 || len(lk) != 0 {
		t.Fatalf("after the expiry: leases %v (the holder's is %s), locks %v", ls, held.Path(), lk)
	}
	o := sim.Submit(w, 0, m.Acquire())
	w.Drive()
	if _, err := mustRun(t, w, 1, held.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o.Done }) || o.Err != nil {
		t.Fatalf("acquire on the new session: %+v", o)
	}
}

// Package doc: "at most n leases on one path are held at any instant";
// Client: "One Client may acquire several leases (each Acquire is an
// acquirer of its own)", "goroutines acquiring through one Client never
// wait for each other's acquires", "safe from any goroutine". Eight
// goroutines share one Client of n = 2 on one session, each acquiring and
// releasing three times with contexts that end before the call, while it
// waits, or never: at no instant are more than 2 leases held (or more
// than 3 lease nodes there: 2 and one waiter's), every lease taken is
// released, and nothing is left. Run under -race too.
func TestOneClientFromManyGoroutines(t *testing.T) {
	w, _ := newWorld(t, 55, 1)
	cl, err := semaphore.NewClient(w.Execs[0], "/s", 2)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	holding, most, won := 0, 0, 0
	const goroutines = 8
	finished := 0
	for g := 0; g < goroutines; g++ {
		w.Go(0, func(a *sim.Actor) {
			defer func() { mu.Lock(); finished++; mu.Unlock() }()
			for round := 0; round < 3; round++ {
				ctx, cancel := a.Context(), context.CancelFunc(func() {})
				switch (g + round) % 3 {
				case 0:
					ctx, cancel = a.WithCancel(a.Context())
					cancel()
				case 1:
					ctx, cancel = a.WithTimeout(a.Context(), time.Duration(1+a.Rand().IntN(3))*time.Second)
				}
				var l *semaphore.Lease
				var err error
				if round == 2 {
					l, err = cl.TryAcquire(ctx)
				} else {
					l, err = cl.Acquire(ctx)
				}
				cancel()
				if err != nil {
					if !errors.Is(err, task.ErrCanceled) && !errors.Is(err, task.ErrDeadlineExceeded) && !errors.Is(err, semaphore.ErrBusy) {
						t.Errorf("goroutine %d round %d: %v", g, round, err)
					}
					continue
				}
				mu.Lock()
				holding++
				won++
				most = max(most, holding)
				if n := len(w.Children("/s/leases")); n > 3 {
					t.Errorf("%d lease nodes (2 held and one waiter's at most)", n)
				}
				mu.Unlock()
				_ = a.Sleep(a.Context(), time.Duration(a.Rand().IntN(2000))*time.Millisecond)
				mu.Lock()
				holding--
				mu.Unlock()
				rctx, rcancel := a.WithCancel(a.Context())
				if a.Rand().IntN(2) == 0 {
					rcancel()
				}
				if err := cl.Release(rctx, l); err != nil && !errors.Is(err, task.ErrCanceled) {
					t.Errorf("goroutine %d round %d: release: %v", g, round, err)
				}
				rcancel()
			}
		})
	}
	if !w.Settle(func() bool { mu.Lock(); defer mu.Unlock(); return finished == goroutines }) {
		t.Fatal("the goroutines never finished")
	}
	w.Drive()
	if most > 2 || won == 0 {
		t.Fatalf("at most %d held at once (want 1..2), %d leases won", most, won)
	}
	if left := append(w.Children("/s/leases"), w.Children("/s/locks")...); len(left) != 0 {
		t.Fatalf("nodes left: %v", left)
	}
	noReportedErrors(t, w)
}

// Client.Acquire: "If the lease was acquired just as ctx ended, it is
// released"; Client: the next acquire waits for "the release of a lease
// taken just as ctx ended" (and for the internal lock's delete). n = 1,
// client 1 holds; the Client on client 0 waits in Acquire. Client 1
// releases; the waiter decides to hold and releases the internal lock,
// whose delete is held on the wire; the Acquire's ctx is canceled then.
// Acquire returns task.ErrCanceled; the Client's next TryAcquire, started
// before the held delete is sent, takes the lease (its own won-and-undone
// lease and internal lock node are not in its way), and nothing is left
// once it releases.
func TestClientAcquireWonAsCtxEnds(t *testing.T) {
	w, hc := leaseWorld(t, 2)
	m := mustSem(t, "/s", 1)
	other, err := mustRun(t, w, 1, m.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := semaphore.NewClient(w.Execs[0], "/s", 1)
	if err != nil {
		t.Fatal(err)
	}
	var cancel context.CancelFunc
	var acqErr, tryErr error
	returned, over := make(chan struct{}), make(chan struct{})
	a := w.Go(0, func(a *sim.Actor) {
		defer close(over)
		var ctx context.Context
		ctx, cancel = a.WithCancel(a.Context())
		_, acqErr = cl.Acquire(ctx)
		close(returned)
		var l *semaphore.Lease
		l, tryErr = cl.TryAcquire(a.Context())
		if tryErr == nil {
			_ = cl.Release(a.Context(), l)
		}
	})
	w.Settle(func() bool { return len(w.Children("/s/leases")) == 2 })
	hc.match = deletesUnder("/s/locks/")
	if _, err := mustRun(t, w, 1, other.Release()); err != nil {
		t.Fatal(err)
	}
	w.Settle(func() bool { return hc.req != nil })
	if hc.req == nil || isClosed(returned) {
		t.Fatalf("setup: the internal lock's release is not on the wire (returned %v: %v)", isClosed(returned), acqErr)
	}
	w.Interrupt(a, cancel)
	w.Settle(func() bool { return isClosed(returned) })
	if !errors.Is(acqErr, task.ErrCanceled) {
		t.Fatalf("Acquire canceled as the lease was won = %v, want task.ErrCanceled", acqErr)
	}
	w.Drive()
	hc.send()
	if !w.Settle(func() bool { return isClosed(over) }) {
		t.Fatal("the actor never finished")
	}
	if tryErr != nil {
		t.Fatalf("TryAcquire with the lease free and no other acquirer = %v", tryErr)
	}
	w.Drive()
	if left := append(w.Children("/s/leases"), w.Children("/s/locks")...); len(left) != 0 {
		t.Fatalf("nodes left: %v", left)
	}
}

// PROTOCOL.md, Safety: "processes that give one path different counts,
// which the package doc rules out, hold at most the largest n between
// them, and those with a smaller n wait while the others hold more than
// it". Client 0 holds 2 leases of n = 2; client 1's acquire of n = 1
// waits while 2, and then 1, of them are held, and holds once none is;
// client 0's next acquire of n = 2 waits behind it on the internal lock
// (first come, first served), and holds once it releases: never more
// than 2 holders.
func TestDifferentCountsOnOnePath(t *testing.T) {
	w, _ := newWorld(t, 56, 2)
	two, one := mustSem(t, "/s", 2), mustSem(t, "/s", 1)
	a, err := mustRun(t, w, 0, two.AcquireMany(2))
	if err != nil {
		t.Fatal(err)
	}
	small := sim.Submit(w, 1, one.Acquire())
	w.Drive()
	if small.Done {
		t.Fatalf("n = 1 held beside 2 leases: %+v", small)
	}
	if _, err := mustRun(t, w, 0, a[0].Release()); err != nil {
		t.Fatal(err)
	}
	settleFor(w, 5*time.Second)
	if small.Done {
		t.Fatalf("n = 1 held beside 1 lease: %+v", small)
	}
	big := sim.Submit(w, 0, two.Acquire())
	settleFor(w, 5*time.Second)
	if big.Done {
		t.Fatalf("n = 2 overtook the n = 1 waiter ahead of it on the internal lock: %+v", big)
	}
	if _, err := mustRun(t, w, 0, a[1].Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return small.Done && big.Done }) || small.Err != nil || big.Err != nil {
		t.Fatalf("after both releases: n = 1 %+v, n = 2 %+v", small, big)
	}
	if n := len(w.Children("/s/leases")); n != 2 {
		t.Fatalf("%d lease nodes with 2 holders", n)
	}
}

// Client: its methods "need someone running the executor"; a call
// waiting when the executor stops must not wait for its ctx. n = 1,
// client 1 holds; on client 0 a Client's Acquire waits for the lease and
// another waits for the internal lock behind it. Client 0's executor
// stops: both return task.ErrClosed, and the nodes went with the session.
func TestWaitingAcquiresEndWhenTheExecutorStops(t *testing.T) {
	w, _ := newWorld(t, 57, 2)
	m := mustSem(t, "/s", 1)
	if _, err := mustRun(t, w, 1, m.Acquire()); err != nil {
		t.Fatal(err)
	}
	cl, err := semaphore.NewClient(w.Execs[0], "/s", 1)
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, 2)
	done := 0
	for i := range errs {
		w.Go(0, func(a *sim.Actor) {
			_, errs[i] = cl.Acquire(a.Context())
			done++
		})
	}
	w.Settle(func() bool { return len(w.Children("/s/locks")) == 2 })
	if n := len(w.Children("/s/locks")); n != 2 || done != 0 {
		t.Fatalf("setup: %d lock nodes, %d done: %v", n, done, errs)
	}
	w.Execs[0].Shutdown()
	if !w.Settle(func() bool { return done == 2 }) {
		t.Fatal("the waiting Acquires never returned")
	}
	for i, err := range errs {
		if !errors.Is(err, task.ErrClosed) {
			t.Errorf("Acquire %d waiting when the executor stopped = %v, want task.ErrClosed", i, err)
		}
	}
	if ls, lk := w.Children("/s/leases"), w.Children("/s/locks"); len(ls) != 1 || len(lk) != 0 {
		t.Fatalf("after the executor stopped: leases %v, locks %v", ls, lk)
	}
}

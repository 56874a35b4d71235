package queue_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

// newWorld is a sim.World of n clients, closed when the test ends.
func newWorld(t testing.TB, n int) *sim.World {
	t.Helper()
	w, err := sim.New(sim.Config{Seed: 1, Clients: n})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

// mustRun runs tk on client i to its end; a flow that never ends fails
// the test.
func mustRun[T any](tb testing.TB, w *sim.World, i int, tk task.Task[T]) (T, error) {
	tb.Helper()
	v, err := sim.Run(w, i, tk)
	if err == sim.ErrStuck {
		tb.Fatalf("task on client %d never ended", i)
	}
	return v, err
}

func mustNew(t testing.TB, dir string, opts ...queue.Option) *queue.Queue {
	t.Helper()
	q, err := queue.New(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// Names: priority 0 is ZooKeeper's DistributedQueue's "qn-" + sequence;
// other priorities a prefix DistributedQueue skips; both parse back.
func TestNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		pri  int
		seq  int64
		ok   bool
	}{
		{"qn-0000000007", 0, 7, true},
		{"qn--2147483648", 0, -2147483648, true},
		{queue.Prefix(5) + "0000000003", 5, 3, true},
		{queue.Prefix(-12) + "0000000004", -12, 4, true},
		{queue.Prefix(999) + "0000000004", 999, 4, true},
		{"qp+000-0000000001", 0, 0, false},
		{"qn-", 0, 0, false},
		{"qn-x1", 0, 0, false},
		{"lock-0000000001", 0, 0, false},
		{"qp+5-0000000001", 0, 0, false},
	} {
		p, s, ok := queue.Parse(tc.name)
		if ok != tc.ok || (ok && (p != tc.pri || s != tc.seq)) {
			t.Errorf("parse(%q) = %d, %d, %v; want %d, %d, %v", tc.name, p, s, ok, tc.pri, tc.seq, tc.ok)
		}
	}
	if got := queue.Prefix(7); got != "qp+007-" {
		t.Errorf("prefix(7) = %q", got)
	}
}

// Bad input gets a typed error at once, never a panic.
func TestBadInput(t *testing.T) {
	for _, dir := range []string{"", "/", "rel", "/a/", "/a//b"} {
		if _, err := queue.New(dir); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("New(%q): %v, want ErrInvalidPath", dir, err)
		}
	}
	for _, o := range []queue.Option{queue.WithBound(0), queue.WithBound(-3), queue.WithMode(queue.Mode(7))} {
		if _, err := queue.New("/q", o); !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("bad option: %v, want ErrInvalidArgument", err)
		}
	}
	if _, err := queue.NewClient(nil, "/q"); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("NewClient(nil): %v", err)
	}
	w := newWorld(t, 1)
	q := mustNew(t, "/q")
	for _, p := range []int{queue.MinPriority - 1, queue.MaxPriority + 1} {
		if _, err := mustRun(t, w, 0, q.PutPriority(nil, p)); !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("priority %d: %v", p, err)
		}
	}
	if _, err := mustRun(t, w, 0, q.Put(make([]byte, task.MaxDataSize+1))); err == nil {
		t.Error("put of data over the limit succeeded")
	}
	var it *queue.Item
	if _, err := mustRun(t, w, 0, it.Ack()); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("ack of nil: %v", err)
	}
	if _, err := mustRun(t, w, 0, q.Put([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	got, err := mustRun(t, w, 0, q.Take())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 0, got.Ack()); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("ack of an at-most-once item: %v", err)
	}
}

// Items come out lowest priority number first, and in put order within a
// priority; foreign children of the directory are skipped.
func TestOrder(t *testing.T) {
	for _, mode := range []queue.Mode{queue.AtMostOnce, queue.AtLeastOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			w := newWorld(t, 1)
			q := mustNew(t, "/app/q", queue.WithMode(mode))
			puts := []struct {
				data string
				pri  int
			}{{"a0", 0}, {"b5", 5}, {"c-1", -1}, {"d0", 0}, {"e5", 5}, {"f-1", -1}}
			for _, p := range puts {
				if _, err := mustRun(t, w, 0, q.PutPriority([]byte(p.data), p.pri)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := mustRun(t, w, 0, task.Create("/app/q/stray", nil, task.Persistent)); err != nil {
				t.Fatal(err)
			}
			var got []string
			for range puts {
				it, err := mustRun(t, w, 0, q.Take())
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(it.Data))
				if mode == queue.AtLeastOnce {
					if _, err := mustRun(t, w, 0, it.Ack()); err != nil {
						t.Fatal(err)
					}
				}
			}
			if want := "[c-1 f-1 a0 d0 b5 e5]"; fmt.Sprint(got) != want {
				t.Fatalf("taken %v, want %s", got, want)
			}
			if left := w.Children("/app/q"); fmt.Sprint(left) != "[stray]" {
				t.Fatalf("left in the queue: %v", left)
			}
		})
	}
}

// A bounded queue refuses a put at its bound with ErrFull and takes puts
// again once an item is taken.
func TestBound(t *testing.T) {
	w := newWorld(t, 1)
	q := mustNew(t, "/q", queue.WithBound(2))
	for i := range 2 {
		if _, err := mustRun(t, w, 0, q.Put([]byte{byte(i)})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := mustRun(t, w, 0, q.Put([]byte("over"))); !errors.Is(err, queue.ErrFull) {
		t.Fatalf("put over the bound: %v, want ErrFull", err)
	}
	if n := len(w.Children("/q")); n != 2 {
		t.Fatalf("%d items, want 2", n)
	}
	if _, err := mustRun(t, w, 0, q.Take()); err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 0, q.Put([]byte("again"))); err != nil {
		t.Fatalf("put under the bound: %v", err)
	}
}

// A take on an empty queue waits on a children watch: it sends no
// request while it waits, however long, but the plain exists with which
// its wait reads the watched node again every twice the session timeout
// (task.Watch), and takes the item put later.
func TestTakeWaitsWithoutPolling(t *testing.T) {
	for _, mode := range []queue.Mode{queue.AtMostOnce, queue.AtLeastOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			sent, rereads := 0, 0
			w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: func(i int, c *fakezk.Conn) task.Conn {
				if i == 0 {
					return &countConn{Conn: c, n: &sent, rereads: &rereads}
				}
				return c
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			q := mustNew(t, "/q", queue.WithMode(mode))
			out := sim.Submit(w, 0, q.Take())
			w.Drive()
			before := sent
			for range 30 { // a minute of simulated time, pings only
				w.Clock.Advance(2 * time.Second)
				w.Drive()
			}
			if out.Done {
				t.Fatal("take on an empty queue ended")
			}
			if sent != before {
				t.Fatalf("the waiting take sent %d requests", sent-before)
			}
			// A minute: at most one re-read per watch waited on every 8 s.
			if rereads > 2*(60/8) {
				t.Fatalf("the waiting take read its watched nodes again %d times in a minute", rereads)
			}
			if _, err := mustRun(t, w, 1, q.Put([]byte("late"))); err != nil {
				t.Fatal(err)
			}
			w.Drive()
			if !out.Done || out.Err != nil || string(out.V.Data) != "late" {
				t.Fatalf("take after the put: %+v", out)
			}
		})
	}
}

// countConn counts the requests sent, but the plain exists with which a
// wait on a watch reads its node again (task.Watch), which it counts
// apart.
type countConn struct {
	*fakezk.Conn
	n, rereads *int
}

func (c *countConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if r, ok := req.(*task.ExistsRequest); ok && !r.Watch && c.rereads != nil {
		*c.rereads++
	} else {
		*c.n++
	}
	c.Conn.Do(req, done, watch)
}

// At-least-once: a consumer waiting on an empty queue is woken by the
// death of a consumer holding an item (the exists watch on its marker),
// returns the item and takes it under its own name; the dead consumer's
// ack, run on its next session, fails with ErrDeliveryLost without
// sending anything, and the item is acknowledged once.
func TestReturnWakesWaiter(t *testing.T) {
	w := newWorld(t, 2)
	qa := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	qb := mustNew(t, "/q", queue.WithMode(queue.AtLeastOnce))
	name, err := mustRun(t, w, 0, qa.Put([]byte("job")))
	if err != nil {
		t.Fatal(err)
	}
	held, err := mustRun(t, w, 0, qa.Take())
	if err != nil {
		t.Fatal(err)
	}
	out := sim.Submit(w, 1, qb.Take())
	w.Drive()
	if out.Done {
		t.Fatalf("b took with a's item in flight: %+v", out)
	}
	w.Server.Expire(w.Conns[0])
	w.Drive()
	if !out.Done || out.Err != nil || out.V.Name != name || string(out.V.Data) != "job" {
		t.Fatalf("b after a's expiry: %+v, want %s", out, name)
	}
	if _, err := mustRun(t, w, 0, held.Ack()); !errors.Is(err, queue.ErrDeliveryLost) || !errors.Is(err, recipes.ErrLost) {
		t.Fatalf("a's ack after its session ended: %v, want ErrDeliveryLost (a recipes.ErrLost)", err)
	}
	if _, err := mustRun(t, w, 1, out.V.Ack()); err != nil {
		t.Fatal(err)
	}
	if got := w.Children("/q.inflight"); len(got) != 0 {
		t.Fatalf("in flight after every ack: %v", got)
	}
}

// A Take ended by its context returns the item if the take was applied
// first: nothing taken is lost to a cancellation. Otherwise it fails with
// task.ErrCanceled or task.ErrDeadlineExceeded, matching the context's
// errors.
func TestClientTakeCanceled(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(runCtx) }()
	defer func() { ex.Close(); stop(); <-done }()
	c, err := queue.NewClient(ex, "/q")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Take(ctx); !errors.Is(err, context.Canceled) || !errors.Is(err, task.ErrCanceled) {
		t.Fatalf("take with a canceled context on an empty queue: %v", err)
	}
	dctx, dcancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer dcancel()
	if _, err := c.Take(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("take past its deadline: %v", err)
	}
	if _, err := c.Put(context.Background(), []byte("x")); err != nil {
		t.Fatal(err)
	}
	it, err := c.Take(context.Background())
	if err != nil || string(it.Data) != "x" {
		t.Fatalf("take: %v %v", it, err)
	}
}

// The bound is best-effort: producers whose listings all come before
// their creates all pass it, so with P producers the queue can hold up to
// bound+P-1 items, and no more: a producer's next put lists after its own
// create.
func TestBoundConcurrentProducers(t *testing.T) {
	const producers, bound = 4, 2
	w := newWorld(t, producers)
	q := mustNew(t, "/q", queue.WithBound(bound))
	if _, err := mustRun(t, w, 0, q.Put([]byte("first"))); err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		outs := make([]*sim.Outcome[string], producers)
		for i := range producers {
			outs[i] = sim.Submit(w, i, q.Put(fmt.Appendf(nil, "r%d-%d", round, i)))
		}
		w.Drive()
		full := 0
		for i, o := range outs {
			switch {
			case !o.Done:
				t.Fatalf("put %d did not end", i)
			case errors.Is(o.Err, queue.ErrFull):
				full++
			case o.Err != nil:
				t.Fatal(o.Err)
			}
		}
		n := len(w.Children("/q"))
		t.Logf("round %d: %d items, %d puts refused", round, n, full)
		if n > bound+producers-1 {
			t.Fatalf("%d items with bound %d and %d producers", n, bound, producers)
		}
		if round > 0 && full != producers {
			t.Fatalf("round %d: %d of %d puts refused on a queue over its bound", round, full, producers)
		}
	}
}

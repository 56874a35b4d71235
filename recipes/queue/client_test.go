package queue_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

// The blocking face gives back whatever its context: an Ack is started
// with a context that has ended, and a Take canceled while its delete or
// move is in flight gives the item back instead of losing it or keeping
// it in flight until the session ends.

// failAfter bounds a wait on a real goroutine, as a failure only: every
// wait here ends by an event, long before it.
const failAfter = 20 * time.Second

// runClient starts an executor on conn, run by a goroutine until the
// test ends, and a Client on it.
func runClient(t *testing.T, srv *fakezk.Server, conn task.Conn, opts ...queue.Option) *queue.Client {
	t.Helper()
	ex, err := executor.New(executor.Config{Conn: conn, Clock: srv.Clock(), Seed: 1, OnError: func(err error) { t.Logf("reported: %v", err) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(ctx) }()
	t.Cleanup(func() { ex.Close(); stop(); <-done })
	c, err := queue.NewClient(ex, "/q", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitChildren waits, on watches, until dir has n children.
func waitChildren(dir string, n int) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		var round func()
		round = func() {
			task.Run(s, task.ChildrenW(dir), func(cw task.ChildrenWatch, err error) {
				switch {
				case err != nil:
					k(task.Unit{}, err)
				case len(cw.Names) == n:
					k(task.Unit{}, nil)
				default:
					task.Run(s, cw.Watch.Wait(), func(_ task.Event, err error) {
						if err != nil {
							k(task.Unit{}, err)
							return
						}
						round()
					})
				}
			})
		}
		round()
	}
}

// An Ack with a context that has ended returns its error at once, and the
// ack is applied all the same: the item leaves flight.
func TestClientAckEndedContext(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	c := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(queue.AtLeastOnce))
	bg := context.Background()
	if _, err := c.Put(bg, []byte("x")); err != nil {
		t.Fatal(err)
	}
	it, err := c.Take(bg)
	if err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(bg)
	cancel()
	if err := c.Ack(ended, it); !errors.Is(err, context.Canceled) {
		t.Fatalf("ack with an ended context: %v, want its error", err)
	}
	wctx, wcancel := context.WithTimeout(bg, failAfter)
	defer wcancel()
	if _, err := executor.Await(wctx, c.Executor(), waitChildren("/q.inflight", 0)); err != nil {
		t.Fatalf("the item never left flight: %v", err)
	}
}

// holdConn holds the first request hold matches, unsent, until release,
// and the requests made after it behind it, so that the session's order
// holds (a connection sends a session's requests in the order they are
// made).
type holdConn struct {
	task.Conn
	hold func(task.Request) bool

	mu       sync.Mutex
	queued   []func() // the held request, then those made after it
	released bool
	heldNow  chan struct{}
}

func (c *holdConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.mu.Lock()
	switch {
	case len(c.queued) > 0 && !c.released:
		c.queued = append(c.queued, func() { c.Conn.Do(req, done, watch) })
		c.mu.Unlock()
		return
	case c.hold != nil && c.hold(req):
		c.hold = nil
		c.queued = append(c.queued, func() { c.Conn.Do(req, done, watch) })
		c.mu.Unlock()
		close(c.heldNow)
		return
	}
	c.mu.Unlock()
	c.Conn.Do(req, done, watch)
}

// release sends the held request and those queued behind it, in order.
func (c *holdConn) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.queued {
		f() // the server is Async: no callback runs under c.mu
	}
	c.queued, c.released = nil, true
}

// A Take canceled while its delete (at-most-once) or move (at-least-once)
// is in flight returns the context's error; the delete or move is applied
// after, and the item is given back: another consumer takes it.
func TestClientTakeCanceledInFlight(t *testing.T) {
	for _, mode := range []queue.Mode{queue.AtMostOnce, queue.AtLeastOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			srv := fakezk.New(fakezk.Config{Async: true})
			defer srv.Close()
			hc := &holdConn{Conn: srv.Connect(fakezk.ConnConfig{}), hold: isItemDelete, heldNow: make(chan struct{})}
			a := runClient(t, srv, hc, queue.WithMode(mode))
			b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(mode))
			bg := context.Background()
			if _, err := b.Put(bg, []byte("x")); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(bg)
			type result struct {
				it  *queue.Item
				err error
			}
			out := make(chan result, 1)
			go func() { it, err := a.Take(ctx); out <- result{it, err} }()
			<-hc.heldNow // the take's delete or move is in flight
			cancel()
			if r := <-out; !errors.Is(r.err, context.Canceled) {
				t.Fatalf("take canceled in flight: %+v, want its context's error", r)
			}
			hc.release()
			wctx, wcancel := context.WithTimeout(bg, failAfter)
			defer wcancel()
			it, err := b.Take(wctx)
			if err != nil || string(it.Data) != "x" {
				t.Fatalf("the item after the canceled take: %v %v (not given back)", it, err)
			}
		})
	}
}

// Settle waits for what a take that ended early left going: while the
// canceled take's delete or move is held, Settle with an ended context
// returns that context's error; once the request goes, Settle returns
// when the item is back in the queue (and, at-least-once, out of flight).
func TestClientSettle(t *testing.T) {
	for _, mode := range []queue.Mode{queue.AtMostOnce, queue.AtLeastOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			srv := fakezk.New(fakezk.Config{Async: true})
			defer srv.Close()
			hc := &holdConn{Conn: srv.Connect(fakezk.ConnConfig{}), hold: isItemDelete, heldNow: make(chan struct{})}
			a := runClient(t, srv, hc, queue.WithMode(mode))
			b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(mode))
			bg := context.Background()
			if err := b.Settle(bg); err != nil {
				t.Fatalf("Settle with nothing going: %v", err)
			}
			if _, err := b.Put(bg, []byte("x")); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(bg)
			errc := make(chan error, 1)
			go func() { _, err := a.Take(ctx); errc <- err }()
			<-hc.heldNow
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("take canceled in flight: %v", err)
			}
			if err := a.Settle(ctx); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "settle") {
				t.Fatalf("Settle (ended ctx) while the take's request is held = %v, want its context's error, named", err)
			}
			if _, ok := srv.Children("/q"); !ok {
				t.Fatal("no /q")
			}
			hc.release()
			wctx, wcancel := context.WithTimeout(bg, failAfter)
			defer wcancel()
			if err := a.Settle(wctx); err != nil {
				t.Fatalf("Settle after the request went: %v", err)
			}
			items, _ := srv.Children("/q")
			if len(items) != 1 {
				t.Fatalf("after Settle /q holds %v, want the item given back", items)
			}
			if fl, _ := srv.Children("/q.inflight"); len(fl) != 0 {
				t.Fatalf("after Settle /q.inflight holds %v", fl)
			}
		})
	}
}

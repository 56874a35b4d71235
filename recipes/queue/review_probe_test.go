package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

// Client: "Its methods are safe from any goroutine"; Item.Ack:
// "task.ErrClosed: the executor was closed before the ack's outcome came
// back (refused at once if it was closed before the ack was sent: not
// applied)". Every blocking call after the executor closed ends at once
// with task.ErrClosed (Settle with nil: nothing is left to settle), in
// both modes, and a Take waiting on an empty queue when it closes ends
// with it too. Holds.
func TestClientCallsAfterTheExecutorClosed(t *testing.T) {
	for _, mode := range []queue.Mode{queue.AtMostOnce, queue.AtLeastOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			srv := fakezk.New(fakezk.Config{Async: true})
			defer srv.Close()
			ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			rctx, stop := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = ex.Run(rctx) }()
			defer func() { stop(); <-done }()
			c, err := queue.NewClient(ex, "/q", queue.WithMode(mode))
			if err != nil {
				t.Fatal(err)
			}
			bg := context.Background()
			if _, err := c.Put(bg, []byte("x")); err != nil {
				t.Fatal(err)
			}
			it, err := c.Take(bg)
			if err != nil {
				t.Fatal(err)
			}
			waiting := make(chan error, 1)
			go func() { _, err := c.Take(bg); waiting <- err }()
			ex.Close()
			if err := <-waiting; !errors.Is(err, task.ErrClosed) {
				t.Errorf("a Take waiting as the executor closed: %v, want task.ErrClosed", err)
			}
			if _, err := c.Put(bg, []byte("y")); !errors.Is(err, task.ErrClosed) {
				t.Errorf("Put after close: %v", err)
			}
			if _, err := c.PutPriority(bg, []byte("y"), -3); !errors.Is(err, task.ErrClosed) {
				t.Errorf("PutPriority after close: %v", err)
			}
			if _, err := c.Take(bg); !errors.Is(err, task.ErrClosed) {
				t.Errorf("Take after close: %v", err)
			}
			if mode == queue.AtLeastOnce {
				if err := c.Ack(bg, it); !errors.Is(err, task.ErrClosed) {
					t.Errorf("Ack after close: %v", err)
				}
				ctx, cancel := context.WithCancel(bg)
				cancel()
				if err := c.Ack(ctx, it); err == nil {
					t.Errorf("Ack with an ended ctx after close: nil")
				}
			}
			if err := c.Settle(bg); err != nil {
				t.Errorf("Settle after close: %v", err)
			}
		})
	}
}

// Client: "Its methods are safe from any goroutine ... Each Client is one
// consumer". Eight goroutines share one at-least-once Client, each
// putting, taking and acknowledging, with a second Client beside: every
// item is delivered and acknowledged once, nothing is left in flight,
// and the Client's session has one marker. Holds (run under -race).
func TestOneClientFromManyGoroutines(t *testing.T) {
	for _, mode := range []queue.Mode{queue.AtMostOnce, queue.AtLeastOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			srv := fakezk.New(fakezk.Config{Async: true})
			defer srv.Close()
			a := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(mode))
			b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(mode))
			const gs, per = 8, 12
			bg := context.Background()
			var mu sync.Mutex
			seen := map[string]int{}
			var wg sync.WaitGroup
			errs := make(chan error, 2*gs)
			for g := range gs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := a
					if g%4 == 3 {
						c = b
					}
					for i := range per {
						if _, err := c.PutPriority(bg, fmt.Appendf(nil, "%d-%d", g, i), i%3-1); err != nil {
							errs <- err
							return
						}
						it, err := c.Take(bg)
						if err != nil {
							errs <- err
							return
						}
						mu.Lock()
						seen[string(it.Data)]++
						mu.Unlock()
						if mode == queue.AtLeastOnce {
							if err := c.Ack(bg, it); err != nil {
								errs <- fmt.Errorf("ack of %s: %w", it.Data, err)
								return
							}
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if len(seen) != gs*per {
				t.Errorf("%d items taken, want %d", len(seen), gs*per)
			}
			for d, n := range seen {
				if n != 1 {
					t.Errorf("%s taken %d times", d, n)
				}
			}
			if got := children(srv, "/q"); len(got) != 0 {
				t.Errorf("left in the queue: %v", got)
			}
			if mode == queue.AtLeastOnce {
				if got := children(srv, "/q.inflight"); len(got) != 0 {
					t.Errorf("left in flight: %v", got)
				}
				if got := children(srv, "/q.consumers"); len(got) != 2 {
					t.Errorf("markers: %v, want one per Client", got)
				}
			}
		})
	}
}

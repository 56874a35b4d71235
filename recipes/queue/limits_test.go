package queue_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

// An at-most-once take whose delete was applied, its reply lost with
// the session: the Take fails with the session's end, and the item goes
// to the executor's error report as an *UnknownTakeError with its data
// (PROTOCOL.md, Faults).
func TestExpiryWithTheDeleteSentReportsTheItem(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	conn := srv.Connect(fakezk.ConnConfig{})
	lr := &lostReply{Conn: conn, match: isItemDelete, replied: make(chan struct{})}
	a, _, reports := reportingClient(t, srv, lr, queue.WithMode(queue.AtMostOnce))
	b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(queue.AtMostOnce))
	bg := context.Background()
	if _, err := b.Put(bg, []byte("x")); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { _, err := a.Take(bg); errc <- err }()
	<-lr.replied // the delete is applied; its reply is held
	srv.Expire(conn)
	err := <-errc
	if items := children(srv, "/q"); len(items) != 0 {
		t.Fatalf("/q holds %v: the delete was applied", items)
	}
	if !errors.Is(err, task.ErrSessionExpired) {
		t.Fatalf("Take whose delete was sent (and applied) when the session expired: %v, want task.ErrSessionExpired", err)
	}
	sctx, scancel := context.WithTimeout(bg, settleBound)
	defer scancel()
	_ = a.Settle(sctx)
	for _, r := range reports() {
		var ute *queue.UnknownTakeError
		if errors.As(r, &ute) && string(ute.Item.Data) == "x" {
			return
		}
	}
	t.Fatalf("the item taken as the session ended is not reported with its data: %v", reports())
}

// largestPut bisects the largest data c.Put accepts in /q.
func largestPut(t *testing.T, srv *fakezk.Server, c *queue.Client) int {
	t.Helper()
	return largestPutIn(t, srv, c, "/q")
}

// The largest data Put accepts at least once is taken: the take's move
// carries it in flight under a longer path, with more ops (checkSize).
// Before, Put accepted data the move was refused for, and every Take
// failed at that item.
func TestLargestPutIsTakenAtLeastOnce(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	c := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(queue.AtLeastOnce))
	n := largestPut(t, srv, c)
	if n < task.MaxDataSize-512 {
		t.Fatalf("Put refuses %d bytes: more than the largest request's paths and ops need", n+1)
	}
	t.Logf("largest put at least once: %d bytes", n)
	takenBehindASmallOne(t, c, n)
}

// takenBehindASmallOne puts an item of n bytes, then a small one, and
// takes and acknowledges both (at least once): Put accepted the large
// one, so a take moves it.
func takenBehindASmallOne(t *testing.T, c *queue.Client, n int) {
	t.Helper()
	bg := context.Background()
	if _, err := c.Put(bg, make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(bg, []byte("small, behind it")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		ctx, cancel := context.WithTimeout(bg, failAfter)
		it, err := c.Take(ctx)
		cancel()
		if err != nil {
			t.Fatalf("take %d, queue holding an item of %d bytes (accepted by Put) then a small one: %v", i, n, err)
		}
		if err := c.Ack(bg, it); err != nil {
			t.Fatal(err)
		}
	}
}

// largestTake finds, by bisection, the largest data an at-least-once
// take can move in flight (each probe acknowledged, or deleted by hand
// when the take fails).
func largestTake(t *testing.T, srv *fakezk.Server, c *queue.Client) int {
	t.Helper()
	bg := context.Background()
	lo, hi := 1, task.MaxDataSize
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		name, err := c.Put(bg, make([]byte, mid))
		if errors.Is(err, task.ErrDataTooLarge) {
			hi = mid
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(bg, failAfter)
		it, err := c.Take(ctx)
		cancel()
		switch {
		case err == nil:
			lo = mid
			if err := c.Ack(bg, it); err != nil {
				t.Fatal(err)
			}
		case errors.Is(err, task.ErrDataTooLarge):
			hi = mid
			if err := srv.AdminDelete("/q/" + name); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal(err)
		}
	}
	return lo
}

// The largest data a take moves in flight comes back when its consumer
// dies: the return carries it under a name above the counter's, with
// more ops. Before, the return was refused, the item stayed in flight for
// good and every take that found the queue empty failed.
func TestLargestTakenComesBackFromADeadConsumer(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	conn := srv.Connect(fakezk.ConnConfig{})
	a := runClient(t, srv, conn, queue.WithMode(queue.AtLeastOnce))
	b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(queue.AtLeastOnce))
	bg := context.Background()
	n := largestTake(t, srv, a)
	if _, err := a.Put(bg, make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, failAfter)
	if _, err := a.Take(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	srv.Expire(conn) // a dies holding the item: it must come back
	ctx, cancel = context.WithTimeout(bg, failAfter)
	defer cancel()
	it, err := b.Take(ctx)
	if err != nil {
		t.Fatalf("item of %d bytes (put and taken fine), its consumer's session expired: the other consumer's take: %v; in flight: %v", n, err, children(srv, "/q.inflight"))
	}
	if len(it.Data) != n {
		t.Fatalf("took %d bytes, want the returned item's %d", len(it.Data), n)
	}
}

func children(srv *fakezk.Server, p string) []string { c, _ := srv.Children(p); return c }

// At most once, the largest data Put accepts, taken by a Take canceled
// with its delete in flight, is put back.
// Before, the put-back's name was longer than the put's, the create was
// refused and the item lost with no data in the report.
func TestLargestPutIsPutBack(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	hc := &armConn{Conn: srv.Connect(fakezk.ConnConfig{})}
	a, _, reports := reportingClient(t, srv, hc, queue.WithMode(queue.AtMostOnce))
	b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(queue.AtMostOnce))
	bg := context.Background()
	n := largestPut(t, srv, b)
	if _, err := b.Put(bg, make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	takeCanceledWithItsDeleteInFlight(t, hc, a)
	if items := children(srv, "/q"); len(items) != 1 {
		t.Fatalf("item of %d bytes (accepted by Put) taken by a canceled take: not put back (/q: %v); reports: %v", n, items, reports())
	}
}

// An item put back by a canceled at-most-once take is taken before an
// item put after it: items are taken in the order their creates were
// applied (doc.go, Order). Before, a put-back was named above every
// number the counter hands out, behind every later put.
func TestPutBackBeforeLaterPuts(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	hc := &armConn{Conn: srv.Connect(fakezk.ConnConfig{})}
	a := runClient(t, srv, hc, queue.WithMode(queue.AtMostOnce))
	b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(queue.AtMostOnce))
	bg := context.Background()
	if _, err := b.Put(bg, []byte("x")); err != nil {
		t.Fatal(err)
	}
	takeCanceledWithItsDeleteInFlight(t, hc, a)
	if _, err := b.Put(bg, []byte("y")); err != nil { // created after x's put-back
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, failAfter)
	defer cancel()
	it, err := b.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(it.Data) != "x" {
		t.Fatalf("took %q (%s) first; x was put back before y was put", it.Data, it.Name)
	}
}

// takeCanceledWithItsDeleteInFlight has a take of a, at most once, delete
// the first item with its reply held on hc, cancels it, lets the delete be
// applied and waits for a's put-back to settle.
func takeCanceledWithItsDeleteInFlight(t *testing.T, hc *armConn, a *queue.Client) {
	t.Helper()
	bg := context.Background()
	held := hc.arm(isItemDelete)
	ctx, cancel := context.WithCancel(bg)
	errc := make(chan error, 1)
	go func() { _, err := a.Take(ctx); errc <- err }()
	<-held
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("take canceled in flight: %v", err)
	}
	hc.release()
	sctx, scancel := context.WithTimeout(bg, settleBound)
	defer scancel()
	if err := a.Settle(sctx); err != nil {
		t.Fatal(err)
	}
}

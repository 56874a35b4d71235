package queue_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

// armConn holds, unsent, each request that the armed predicate matches
// (one at a time: arm again for the next); release sends it, lose
// answers it with connection loss without sending it (lost with the
// connection, not applied).
type armConn struct {
	task.Conn
	mu      sync.Mutex
	hold    func(task.Request) bool
	req     task.Request
	done    func(task.Response)
	watch   func(task.Event)
	heldNow chan struct{}
}

func (c *armConn) arm(p func(task.Request) bool) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hold, c.heldNow = p, make(chan struct{})
	return c.heldNow
}

func (c *armConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.mu.Lock()
	if c.hold != nil && c.hold(req) {
		c.hold = nil
		c.req, c.done, c.watch = req, done, watch
		ch := c.heldNow
		c.mu.Unlock()
		close(ch)
		return
	}
	c.mu.Unlock()
	c.Conn.Do(req, done, watch)
}

func (c *armConn) take() (task.Request, func(task.Response), func(task.Event)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	req, done, watch := c.req, c.done, c.watch
	c.req, c.done, c.watch = nil, nil, nil
	return req, done, watch
}

func (c *armConn) release() {
	req, done, watch := c.take()
	c.Conn.Do(req, done, watch)
}

func (c *armConn) lose() {
	_, done, _ := c.take()
	done(task.Response{Err: task.ErrConnectionLoss})
}

func isItemCreate(req task.Request) bool {
	r, ok := req.(*task.CreateRequest)
	return ok && strings.HasPrefix(r.Path, "/q/")
}

// settleBound bounds Settle where it must return: only a hang reaches it.
const settleBound = 5 * time.Second

// Client.Settle's doc: "Work the executor's shutdown ends counts as
// settled." The executor is closed while a canceled take's delete or
// move is held (never sent), and while the give-back of the item is held
// (at most once, its put-back; at least once, the multi that returns it
// from flight): Settle must return, not wait for work no executor will
// run.
func TestAdvSettleAfterClose(t *testing.T) {
	isGiveBack := func(req task.Request) bool {
		switch r := req.(type) {
		case *task.CreateRequest:
			return strings.HasPrefix(r.Path, "/q/")
		case *task.MultiRequest:
			for _, op := range r.Ops {
				if cr, ok := op.(*task.CreateRequest); ok && strings.HasPrefix(cr.Path, "/q/") {
					return true
				}
			}
		}
		return false
	}
	for _, mode := range []queue.Mode{queue.AtMostOnce, queue.AtLeastOnce} {
		for _, stage := range []string{"take held", "give-back held"} {
			t.Run(mode.String()+"/"+stage, func(t *testing.T) {
				srv := fakezk.New(fakezk.Config{Async: true})
				defer srv.Close()
				hc := &armConn{Conn: srv.Connect(fakezk.ConnConfig{})}
				a := runClient(t, srv, hc, queue.WithMode(mode))
				b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(mode))
				bg := context.Background()
				if _, err := b.Put(bg, []byte("x")); err != nil {
					t.Fatal(err)
				}
				heldTake := hc.arm(isItemDelete)
				ctx, cancel := context.WithCancel(bg)
				errc := make(chan error, 1)
				go func() { _, err := a.Take(ctx); errc <- err }()
				<-heldTake
				cancel()
				if err := <-errc; !errors.Is(err, context.Canceled) {
					t.Fatalf("take canceled in flight: %v", err)
				}
				if stage == "give-back held" {
					heldBack := hc.arm(isGiveBack)
					hc.release()
					<-heldBack
				}
				a.Executor().Close()
				sctx, scancel := context.WithTimeout(bg, settleBound)
				defer scancel()
				if err := a.Settle(sctx); err != nil {
					t.Fatalf("Settle after the executor closed with a give-back going = %v, want nil (the shutdown ended it)", err)
				}
			})
		}
	}
}

// reportingClient is runClient with the executor's OnError reports kept
// (reports returns them so far), and the executor the Client runs on.
func reportingClient(t *testing.T, srv *fakezk.Server, conn task.Conn, opts ...queue.Option) (c *queue.Client, ex *executor.Executor, reports func() []error) {
	t.Helper()
	var mu sync.Mutex
	var got []error
	ex, err := executor.New(executor.Config{Conn: conn, Clock: srv.Clock(), Seed: 1, OnError: func(err error) {
		mu.Lock()
		got = append(got, err)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(ctx) }()
	t.Cleanup(func() { ex.Close(); stop(); <-done })
	c, err = queue.NewClient(ex, "/q", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c, ex, func() []error {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// backOrReported checks that the item x a canceled take deleted is back
// in /q, or reported to OnError as an *UnknownTakeError with its data.
func backOrReported(t *testing.T, srv *fakezk.Server, reports []error, why string) {
	t.Helper()
	if items, _ := srv.Children("/q"); len(items) == 1 {
		return
	}
	for _, err := range reports {
		var ute *queue.UnknownTakeError
		if errors.As(err, &ute) && string(ute.Item.Data) == "x" && errors.Is(err, queue.ErrOutcomeUnknown) {
			return
		}
	}
	t.Fatalf("the item taken by the canceled take is neither back nor reported (%s); reports: %v", why, reports)
}

// Client.Take's doc: a take canceled while its delete is in flight puts
// the item back; a put-back whose outcome a lost connection or an expiry
// makes unknown is not sent again (it could put the item twice) and is
// reported to OnError with the item. An at-most-once take is canceled
// while its delete is in flight; the delete is applied, and the session
// expires while the item's put-back is in flight, not applied. After
// Settle the item is back or reported, never lost silently.
func TestAdvPutBackAcrossExpiry(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	conn := srv.Connect(fakezk.ConnConfig{})
	hc := &armConn{Conn: conn}
	a, _, reports := reportingClient(t, srv, hc, queue.WithMode(queue.AtMostOnce))
	b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(queue.AtMostOnce))
	bg := context.Background()
	if _, err := b.Put(bg, []byte("x")); err != nil {
		t.Fatal(err)
	}
	heldDelete := hc.arm(isItemDelete)
	ctx, cancel := context.WithCancel(bg)
	errc := make(chan error, 1)
	go func() { _, err := a.Take(ctx); errc <- err }()
	<-heldDelete
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("take canceled in flight: %v", err)
	}
	heldPut := hc.arm(isItemCreate)
	hc.release()
	<-heldPut
	// The put-back's create is lost with the session (never applied).
	srv.Expire(conn)
	sctx, scancel := context.WithTimeout(bg, settleBound)
	defer scancel()
	if err := a.Settle(sctx); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	backOrReported(t, srv, reports(), "its put-back ended with the session")
}

// lostReply lets the first request lost matches reach the server, and
// holds its reply until drop, which delivers connection loss instead:
// the request applied, its reply lost.
type lostReply struct {
	task.Conn
	mu      sync.Mutex
	match   func(task.Request) bool
	done    func(task.Response)
	replied chan struct{}
}

func (c *lostReply) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.mu.Lock()
	if c.match != nil && c.match(req) {
		c.match = nil
		c.mu.Unlock()
		c.Conn.Do(req, func(task.Response) {
			c.mu.Lock()
			c.done = done
			c.mu.Unlock()
			close(c.replied)
		}, watch)
		return
	}
	c.mu.Unlock()
	c.Conn.Do(req, done, watch)
}

func (c *lostReply) drop() {
	c.mu.Lock()
	done := c.done
	c.mu.Unlock()
	done(task.Response{Err: task.ErrConnectionLoss})
}

// The package doc: at most once, an item can be lost when "taken by a
// Take whose delete's reply was lost, which reports it (UnknownTakeError,
// with the item's data) instead of delivering it." A Take canceled while
// its delete is in flight, the delete applied and its reply lost: the
// caller has its context's error, and the UnknownTakeError the detached
// delete comes to goes nowhere (not to Config.OnError either): the item
// is gone and nothing reports it.
func TestAdvCanceledTakeLostReplyReported(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	conn := srv.Connect(fakezk.ConnConfig{})
	lr := &lostReply{Conn: conn, match: isItemDelete, replied: make(chan struct{})}
	a, _, reported := reportingClient(t, srv, lr, queue.WithMode(queue.AtMostOnce))
	b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(queue.AtMostOnce))
	bg := context.Background()
	if _, err := b.Put(bg, []byte("precious")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	errc := make(chan error, 1)
	go func() { _, err := a.Take(ctx); errc <- err }()
	<-lr.replied // the delete is applied; its reply is held
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("take canceled in flight: %v", err)
	}
	lr.drop()
	sctx, scancel := context.WithTimeout(bg, settleBound)
	defer scancel()
	if err := a.Settle(sctx); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	if items, _ := srv.Children("/q"); len(items) != 0 {
		t.Fatalf("/q holds %v: the delete was applied", items)
	}
	reports := reported()
	for _, r := range reports {
		var ute *queue.UnknownTakeError
		if errors.As(r, &ute) && string(ute.Item.Data) == "precious" {
			return
		}
	}
	t.Fatalf("the item taken by a canceled take whose delete's reply was lost is gone and reported nowhere (reports: %v)", reports)
}

// The same promise as TestAdvPutBackAcrossExpiry, with no expiry: the
// put-back's create is lost with the connection, not applied (the
// client sees connection loss). The put-back ends with an unknown
// outcome and is not tried again: the item must be reported.
func TestAdvPutBackLostWithConnection(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	hc := &armConn{Conn: srv.Connect(fakezk.ConnConfig{})}
	a, _, reports := reportingClient(t, srv, hc, queue.WithMode(queue.AtMostOnce))
	b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(queue.AtMostOnce))
	bg := context.Background()
	if _, err := b.Put(bg, []byte("x")); err != nil {
		t.Fatal(err)
	}
	heldDelete := hc.arm(isItemDelete)
	ctx, cancel := context.WithCancel(bg)
	errc := make(chan error, 1)
	go func() { _, err := a.Take(ctx); errc <- err }()
	<-heldDelete
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("take canceled in flight: %v", err)
	}
	heldPut := hc.arm(isItemCreate)
	hc.release()
	<-heldPut
	hc.lose()
	sctx, scancel := context.WithTimeout(bg, settleBound)
	defer scancel()
	if err := a.Settle(sctx); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	backOrReported(t, srv, reports(), "its put-back's create lost with the connection")
}

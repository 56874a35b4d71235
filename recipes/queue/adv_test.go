package queue_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

// armConn holds, unsent, each request that the armed predicate matches
// (one at a time: arm again for the next).
type armConn struct {
	task.Conn
	mu      sync.Mutex
	hold    func(task.Request) bool
	held    func()
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
		c.held = func() { c.Conn.Do(req, done, watch) }
		ch := c.heldNow
		c.mu.Unlock()
		close(ch)
		return
	}
	c.mu.Unlock()
	c.Conn.Do(req, done, watch)
}

func (c *armConn) release() {
	c.mu.Lock()
	f := c.held
	c.held = nil
	c.mu.Unlock()
	f()
}

func isItemCreate(req task.Request) bool {
	r, ok := req.(*task.CreateRequest)
	return ok && strings.HasPrefix(r.Path, "/q/")
}

// settleBound bounds Settle where it must return: only a hang reaches it.
const settleBound = 5 * time.Second

// Client.Settle's doc: "Work the executor's shutdown ends counts as
// settled." The executor is closed while a canceled take's delete is
// held (never sent), and while the put-back of an at-most-once item is
// held: Settle must return, not wait for work no executor will run.
func TestAdvSettleAfterClose(t *testing.T) {
	for _, stage := range []string{"delete held", "put-back held"} {
		t.Run(stage, func(t *testing.T) {
			srv := fakezk.New(fakezk.Config{Async: true})
			defer srv.Close()
			hc := &armConn{Conn: srv.Connect(fakezk.ConnConfig{})}
			a := runClient(t, srv, hc, queue.WithMode(queue.AtMostOnce))
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
			if stage == "put-back held" {
				heldPut := hc.arm(isItemCreate)
				hc.release()
				<-heldPut
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

// Client.Take's doc: "Nothing taken is lost to a cancellation or kept
// in flight until the session ends, as long as the executor runs until
// the give-back ends: Settle waits for that." An at-most-once take is
// canceled while its delete is in flight; the delete is applied, and the
// session expires while the item's put-back is in flight, not applied.
// The executor runs on (a new session) and Settle returns: the item must
// be back (a persistent node: nothing ties it to the old session).
func TestAdvPutBackAcrossExpiry(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	conn := srv.Connect(fakezk.ConnConfig{})
	hc := &armConn{Conn: conn}
	a := runClient(t, srv, hc, queue.WithMode(queue.AtMostOnce))
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
	if items, _ := srv.Children("/q"); len(items) != 1 {
		t.Fatalf("after Settle /q holds %v: the item taken by the canceled take was lost (its put-back ended with the session)", items)
	}
}

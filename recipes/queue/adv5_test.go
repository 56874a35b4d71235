package queue_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

// Adversarial tests, round 5: promises of the package and Client docs
// checked literally under schedules chosen to break them.

// isListQ matches a listing of /q (a put's count on a bounded queue).
func isListQ(req task.Request) bool {
	r, ok := req.(*task.GetChildrenRequest)
	return ok && r.Path == "/q"
}

// canceledInFlight starts a Take on a whose delete is held by hc, cancels
// it, and checks it returned its context's error: the item is deleted
// (once hc releases the delete) by a take nobody waits for, which must
// put it back.
func canceledInFlight(t *testing.T, a *queue.Client, hc *armConn) {
	t.Helper()
	heldDelete := hc.arm(isItemDelete)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := a.Take(ctx); errc <- err }()
	<-heldDelete
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("take canceled in flight: %v", err)
	}
}

// Client.Take's doc: "Nothing taken is lost to a cancellation or kept in
// flight until the session ends, as long as the executor runs until the
// give-back ends (Settle waits for that), with one exception at most
// once: a put-back whose outcome a lost connection or an expiry makes
// unknown is not sent again".
//
// An at-most-once take on a queue of bound 1 is canceled while its delete
// of x is in flight; the delete is applied, and while the put-back counts
// the queue, a producer puts y into the (now empty) queue. The put-back
// is refused with ErrFull, an outcome that is known (nothing put), and x
// is gone: lost to the cancellation, with no connection lost and no
// expiry.
func TestAdv5PutBackRefusedAtBound(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	hc := &armConn{Conn: srv.Connect(fakezk.ConnConfig{})}
	a, _, reports := reportingClient(t, srv, hc, queue.WithBound(1))
	b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithBound(1))
	bg := context.Background()
	if _, err := b.Put(bg, []byte("x")); err != nil {
		t.Fatal(err)
	}
	canceledInFlight(t, a, hc)
	// The put-back's first request: its count of the items (or, put back
	// without a count, its create).
	heldCount := hc.arm(func(req task.Request) bool { return isListQ(req) || isItemCreate(req) })
	hc.release() // the delete of x: applied
	<-heldCount
	if _, err := b.Put(bg, []byte("y")); err != nil {
		t.Fatalf("put y into the empty queue: %v", err)
	}
	hc.release()
	if err := a.Settle(bg); err != nil {
		t.Fatal(err)
	}
	if got := dataOf(t, srv); !got["x"] {
		t.Fatalf("x, deleted by a take canceled in flight, is not back in the queue (it holds %v; reports: %v)", got, reports())
	}
}

// The same promise, at the counter's end. ErrExhausted's doc: a Put
// "found the directory's sequence counter run out ... while items are
// queued: nothing was put". A put-back is a put: with y queued and the
// counter run out as the put-back's create is in flight, it is refused
// and x, taken by a take canceled in flight, is lost.
func TestAdv5PutBackRefusedAtExhaustedCounter(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	hc := &armConn{Conn: srv.Connect(fakezk.ConnConfig{})}
	a, _, reports := reportingClient(t, srv, hc)
	b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}))
	bg := context.Background()
	if _, err := b.Put(bg, []byte("x")); err != nil {
		t.Fatal(err)
	}
	canceledInFlight(t, a, hc)
	heldPut := hc.arm(isItemCreate)
	hc.release() // the delete of x: applied
	<-heldPut    // the put-back's create
	if _, err := b.Put(bg, []byte("y")); err != nil {
		t.Fatal(err)
	}
	st, _ := srv.NodeStat("/q")
	if err := srv.SetCounters("/q", st.Version, math.MaxInt32); err != nil {
		t.Fatal(err)
	}
	hc.release()
	if err := a.Settle(bg); err != nil {
		t.Fatal(err)
	}
	if got := dataOf(t, srv); !got["x"] {
		t.Fatalf("x, deleted by a take canceled in flight, is not back in the queue (it holds %v; reports: %v)", got, reports())
	}
}

// dataOf returns the data of the items in /q.
func dataOf(t *testing.T, srv *fakezk.Server) map[string]bool {
	t.Helper()
	names, _ := srv.Children("/q")
	got := map[string]bool{}
	for _, n := range names {
		d, _, ok := srv.NodeData("/q/" + n)
		if ok {
			got[string(d)] = true
		}
	}
	return got
}

// endsWhenReady is a Parker (internal/park) that ends its context the
// moment the blocking call it parks could return with its outcome: the
// call's wait sees the outcome and its context's end at once, as a
// caller does whose deadline passes just as the reply comes.
type endsWhenReady struct{ cancel context.CancelFunc }

func (p endsWhenReady) Wait(ready func() bool) {
	for !ready() { // (ready is false until the outcome is there: ctx has not ended)
		runtime.Gosched()
	}
	p.cancel()
}

func (p endsWhenReady) Go(f func(park.Parker)) { go f(p) }

// Client.Ack's doc: "with ctx ended already, or ending before the ack
// does, Ack returns task.ErrCanceled or task.ErrDeadlineExceeded at once
// and the ack goes on in the background (a failure then goes to the
// executor's Config.OnError ...)". A failure is told once: to the caller
// or to OnError.
//
// At-least-once, the consumer's marker deleted by an operator, so the ack
// fails (ErrDeliveryLost); the caller's context ends just as that failure
// comes. Ack's wait (giveUp) then finds both the outcome and the
// context's end ready and picks one at random: half the time it returns
// the context's error, and the failure, handed to the waiter that has
// just left, goes neither to the caller nor to OnError. Forty rounds: the
// failure is dropped in one of them but for a chance of 2^-40.
func TestAdv5AckFailureAsCtxEndsIsTold(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	a, _, reports := reportingClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(queue.AtLeastOnce))
	bg := context.Background()
	for round := range 40 {
		if _, err := a.Put(bg, []byte("x")); err != nil {
			t.Fatal(err)
		}
		it, err := a.Take(bg)
		if err != nil {
			t.Fatal(err)
		}
		markers, _ := srv.Children("/q.consumers")
		for _, m := range markers {
			if err := srv.AdminDelete("/q.consumers/" + m); err != nil {
				t.Fatal(err)
			}
		}
		before := len(reports())
		ctx, cancel := context.WithCancel(bg)
		err = a.Ack(park.NewContext(ctx, endsWhenReady{cancel}), it)
		cancel()
		switch {
		case errors.Is(err, queue.ErrDeliveryLost):
			// told to the caller
		case errors.Is(err, context.Canceled):
			told := false
			for _, r := range reports()[before:] {
				told = told || errors.Is(r, queue.ErrDeliveryLost)
			}
			if !told {
				t.Fatalf("round %d: the ack failed as its context ended; Ack returned %v and the failure went nowhere (reports: %v)", round, err, reports()[before:])
			}
		default:
			t.Fatalf("round %d: ack with the marker deleted: %v", round, err)
		}
	}
}

// slotConn holds requests in slots: each armed slot holds, unsent, the
// first request made after it was armed that its predicate matches;
// other requests go through.
type slotConn struct {
	task.Conn
	mu      sync.Mutex
	slots   []*slot
	markers int // consumer markers' creates sent (not held)
}

type slot struct {
	match   func(task.Request) bool
	held    chan struct{}
	req     task.Request
	done    func(task.Response)
	watch   func(task.Event)
	claimed bool
}

func (c *slotConn) arm(match func(task.Request) bool) *slot {
	c.mu.Lock()
	defer c.mu.Unlock()
	sl := &slot{match: match, held: make(chan struct{})}
	c.slots = append(c.slots, sl)
	return sl
}

func (c *slotConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.mu.Lock()
	for _, sl := range c.slots {
		if !sl.claimed && sl.match(req) {
			sl.claimed, sl.req, sl.done, sl.watch = true, req, done, watch
			c.mu.Unlock()
			close(sl.held)
			return
		}
	}
	if isMarkerCreate(req) {
		c.markers++
	}
	c.mu.Unlock()
	c.Conn.Do(req, done, watch)
}

func (c *slotConn) markersSent() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.markers
}

// submitted is a Parker (internal/park) that only says when the blocking
// call it parks has submitted its flow (it parks just after), and lets
// the call wait as it would outside a simulation.
type submitted struct {
	once *sync.Once
	ch   chan struct{}
}

func (p submitted) Wait(func() bool)       { p.once.Do(func() { close(p.ch) }) }
func (p submitted) Go(f func(park.Parker)) { go f(p) }

// release sends the held request; lose answers it with connection loss,
// unsent (lost with the connection, not applied).
func (c *slotConn) release(sl *slot) { <-sl.held; c.Conn.Do(sl.req, sl.done, sl.watch) }
func (c *slotConn) lose(sl *slot)    { <-sl.held; sl.done(task.Response{Err: task.ErrConnectionLoss}) }

func isMarkerCreate(req task.Request) bool {
	r, ok := req.(*task.CreateRequest)
	return ok && strings.HasPrefix(r.Path, "/q.consumers/")
}

func isInflightList(req task.Request) bool {
	r, ok := req.(*task.GetChildrenRequest)
	return ok && r.Path == "/q.inflight"
}

// The Client's doc: "Each Client is one consumer (in at-least-once mode,
// one registration per session)"; PROTOCOL.md, Take at least once: a
// lost reply of a move "is settled by reading our copy ...; then the
// item is ours, unless another take of the same Queue (the same
// consumer, taking in parallel) has already delivered that copy, which
// the Queue records", and, of its proof, "a second delivery of an item
// only follows a return".
//
// Several goroutines call Take on one at-least-once Client on a fresh
// session: each take that finds no consumer registers one, so the
// session gets two (two markers), and the later registration, landing
// after a take of the first consumer has delivered x, wipes the record of
// delivered copies. A second take of the first consumer, whose move of x
// (sent before x moved) is lost with the connection, settles it by
// reading the copy, finds it, no longer recorded, and delivers x again:
// the same item to two Takes of one consumer with no return between.
// Both are acked: one ack applies, the other reports ErrDeliveryLost,
// which says the item goes back to the queue, and it never does. With the
// canary queue/concurrent-registrations (a registration per take) the
// schedule shows it.
func TestAdv5ConcurrentTakesOneRegistration(t *testing.T) {
	canarytest.Both(t, "queue/concurrent-registrations", func(t *testing.T, bug bool) {
		defect := concurrentTakes(t)
		switch {
		case !bug && defect != "":
			t.Fatal(defect)
		case bug && defect == "":
			t.Fatal("with a registration per take, the schedule no longer delivers x twice to one consumer")
		case bug:
			t.Logf("canary: %s", defect)
		}
	})
}

// concurrentTakes runs TestAdv5ConcurrentTakesOneRegistration's schedule
// and returns the defect it shows ("" for none).
func concurrentTakes(t *testing.T) string {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	sc := &slotConn{Conn: srv.Connect(fakezk.ConnConfig{})}
	a := runClient(t, srv, sc, queue.WithMode(queue.AtLeastOnce))
	bg := context.Background()
	if _, err := a.Put(bg, []byte("x")); err != nil {
		t.Fatal(err)
	}
	type result struct {
		it  *queue.Item
		err error
	}
	ctx, cancel := context.WithCancel(bg)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	take := func(ctx context.Context) chan result {
		out := make(chan result, 1)
		wg.Add(1)
		go func() { defer wg.Done(); it, err := a.Take(ctx); out <- result{it, err} }()
		return out
	}
	// Two takes at once on the fresh session: the first one's
	// registration is held; the second, finding no consumer registered,
	// registers one of its own, lists and reads x, and its move is held.
	lateReg := sc.arm(isMarkerCreate)
	move1 := sc.arm(isItemDelete)
	firstTwo := []chan result{take(ctx)}
	<-lateReg.held
	sub := submitted{once: new(sync.Once), ch: make(chan struct{})}
	firstTwo = append(firstTwo, take(park.NewContext(ctx, sub)))
	<-sub.ch
	// A flow submitted after the second take's runs after its first
	// step, which sends its registration if it makes one.
	if _, err := executor.Await(bg, a.Executor(), task.Value(task.Unit{})); err != nil {
		t.Fatal(err)
	}
	if sc.markersSent() == 0 {
		// The second take waits for the first one's registration: one
		// registration per session. Let them go.
		sc.release(lateReg)
		sc.release(move1)
		cancel()
		wg.Wait()
		if m, _ := srv.Children("/q.consumers"); len(m) != 1 {
			return fmt.Sprintf("one Client on one session registered %d consumers (%v)", len(m), m)
		}
		return ""
	}
	<-move1.held
	// A third take, of the registered consumer, reads x and sends its move.
	move2 := sc.arm(isItemDelete)
	third := take(ctx)
	<-move2.held
	sc.release(move1) // applied: x moves, delivered to the first take
	var got []*queue.Item
	select {
	case r := <-firstTwo[0]:
		got = append(got, r.it)
	case r := <-firstTwo[1]:
		got = append(got, r.it)
	}
	if got[0] == nil || string(got[0].Data) != "x" {
		t.Fatalf("first take: %+v", got[0])
	}
	recovering := sc.arm(isInflightList)
	sc.release(lateReg) // the second registration lands
	<-recovering.held   // (its continuation has run: it recovers next)
	consumers, _ := srv.Children("/q.consumers")
	sc.lose(move2) // the third take's move: lost, not applied
	sc.release(recovering)
	r := <-third
	if r.err == nil {
		got = append(got, r.it)
	}
	if len(got) == 2 {
		errFirst := a.Ack(bg, got[0])
		errSecond := a.Ack(bg, got[1])
		return fmt.Sprintf("x delivered to two takes of one consumer with no return between (acks: %v, %v)", errFirst, errSecond)
	}
	if len(consumers) != 1 {
		return fmt.Sprintf("one Client on one session registered %d consumers (%v), want one registration per session", len(consumers), consumers)
	}
	return ""
}

// ErrExhausted's doc: a Put finds the counter run out "while the
// directory is not empty: items are queued, or nodes that are not items
// (another program's, which the queue skips and never deletes)"; it once
// said only "while items are queued", and a directory that held no item,
// only another program's node, refused every Put for good with that
// message. The queue cannot delete that node: the doc and the error say
// what keeps the counter from restarting, and the Put goes on once the
// node is gone.
func TestAdv5ExhaustedWithForeignChild(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	a := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}))
	bg := context.Background()
	if _, err := a.Put(bg, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Take(bg); err != nil {
		t.Fatal(err)
	}
	if err := srv.AdminCreate("/q/config", nil, 0); err != nil {
		t.Fatal(err)
	}
	st, _ := srv.NodeStat("/q")
	if err := srv.SetCounters("/q", st.Version, math.MaxInt32); err != nil {
		t.Fatal(err)
	}
	_, err := a.Put(bg, []byte("y"))
	if !errors.Is(err, queue.ErrExhausted) || !strings.Contains(err.Error(), "nodes that are not items") {
		t.Fatalf("put into a directory holding only another program's node, its counter run out: %v, want ErrExhausted naming nodes that are not items", err)
	}
	if err := srv.AdminDelete("/q/config"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Put(bg, []byte("y")); err != nil {
		t.Fatalf("put once the directory holds nothing: %v, want the counter restarted", err)
	}
}

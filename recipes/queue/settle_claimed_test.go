package queue_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

// gateConn holds the requests its rules match, one per rule, in the
// order the rules were armed; the test then passes each on, or sends it
// with its reply lost (applied or not as the server decides, answered
// with connection loss).
type gateConn struct {
	task.Conn
	mu    sync.Mutex
	rules []gateRule
}

type gateRule struct {
	match func(task.Request) bool
	ch    chan gated
}

type gated struct {
	req   task.Request
	done  func(task.Response)
	watch func(task.Event)
}

func (g *gateConn) hold(match func(task.Request) bool) <-chan gated {
	g.mu.Lock()
	defer g.mu.Unlock()
	ch := make(chan gated, 1)
	g.rules = append(g.rules, gateRule{match: match, ch: ch})
	return ch
}

func (g *gateConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	g.mu.Lock()
	for i, r := range g.rules {
		if r.match(req) {
			g.rules = slices.Delete(g.rules, i, i+1)
			g.mu.Unlock()
			r.ch <- gated{req, done, watch}
			return
		}
	}
	g.mu.Unlock()
	g.Conn.Do(req, done, watch)
}

// pass sends h on; its reply goes to its caller, after replied is closed.
func (g *gateConn) pass(h gated) <-chan struct{} {
	replied := make(chan struct{})
	g.Conn.Do(h.req, func(r task.Response) { close(replied); h.done(r) }, h.watch)
	return replied
}

// lose sends h on and answers its caller with connection loss once the
// server has answered: applied or not, its reply lost.
func (g *gateConn) lose(h gated) {
	g.Conn.Do(h.req, func(task.Response) { h.done(task.Response{Err: task.ErrConnectionLoss}) }, h.watch)
}

// multiOf reports whether req is a multi that creates under createIn and
// deletes under deleteIn.
func multiOf(req task.Request, createIn, deleteIn string) bool {
	m, ok := req.(*task.MultiRequest)
	if !ok {
		return false
	}
	var c, d bool
	for _, op := range m.Ops {
		switch op := op.(type) {
		case *task.CreateRequest:
			c = c || strings.HasPrefix(op.Path, createIn)
		case *task.DeleteRequest:
			d = d || strings.HasPrefix(op.Path, deleteIn)
		}
	}
	return c && d
}

func isMove(req task.Request) bool          { return multiOf(req, "/q.inflight/", "/q/") }
func isGiveBackMulti(req task.Request) bool { return multiOf(req, "/q/", "/q.inflight/") }
func isCopyExists(req task.Request) bool {
	r, ok := req.(*task.ExistsRequest)
	return ok && strings.HasPrefix(r.Path, "/q.inflight/")
}

// acked.go, moving.settle: "if it exists the move was applied, by this
// take unless another take of this Queue (the same consumer) has
// delivered it". At least once, two takes of one Client read item x and
// send their moves, both canceled, both replies lost: the first move is
// applied, the second finds the copy there. The first take settles, claims
// the copy and gives x back (its take ended) under its own name, at
// version 0 in the same directory; that give-back's reply is lost too.
// The second take then settles: the copy is gone. It took that for its
// move not applied and sent it again, on its read of x from before, and
// the move took the x given back into a copy of the same name; the first
// give-back, sent again, found x's name taken and that copy there, and
// reported a failure to Config.OnError. A copy another take of the Queue
// has claimed is not this take's, there or gone (queue/sim seed 59600952
// of queue/at-least-once/blocking, a restart aimed at a give-back).
func TestSettleOfACopyClaimedByAnotherTakeIsGone(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	g := &gateConn{Conn: srv.Connect(fakezk.ConnConfig{})}
	a, ex, reported := reportingClient(t, srv, g, queue.WithMode(queue.AtLeastOnce))
	b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(queue.AtLeastOnce))
	bg := context.Background()
	if _, err := b.Put(bg, []byte("x")); err != nil {
		t.Fatal(err)
	}

	// Two takes read x and send their moves, held; both are canceled.
	hm1, hm2 := g.hold(isMove), g.hold(isMove)
	ctx, cancel := context.WithCancel(bg)
	errc := make(chan error, 2)
	for range 2 {
		go func() { _, err := a.Take(ctx); errc <- err }()
	}
	m1, m2 := <-hm1, <-hm2
	cancel()
	for range 2 {
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("take canceled with its move in flight: %v", err)
		}
	}
	// The first move: applied, its reply lost. Its take settles, claims
	// the copy and gives x back.
	hg1 := g.hold(isGiveBackMulti)
	g.lose(m1)
	g1 := <-hg1
	// The second move: not applied (the copy is there), its reply lost;
	// its take settles, its read of the copy held.
	he2 := g.hold(isCopyExists)
	g.lose(m2)
	e2 := <-he2
	// The give-back: applied (x back under its name), its reply lost;
	// sent again, held.
	hg1b := g.hold(isGiveBackMulti)
	g.lose(g1)
	g1b := <-hg1b
	// Sent again, it finds x's name taken: its read of the copy held.
	he1 := g.hold(isCopyExists)
	<-g.pass(g1b)
	e1 := <-he1
	// The second take reads the copy: gone. A move it sends again (held)
	// is sent before a read of this executor's sent after it returns.
	hm2b := g.hold(isMove)
	<-g.pass(e2)
	if _, err := executor.Await(bg, ex, task.Exists("/q")); err != nil {
		t.Fatal(err)
	}
	var g2 gated
	select {
	case m2b := <-hm2b:
		// It takes the x given back; its take ended, it gives it back
		// (held until the first give-back has read the copy).
		hg2 := g.hold(isGiveBackMulti)
		<-g.pass(m2b)
		g2 = <-hg2
	default:
	}
	<-g.pass(e1)
	if g2.req != nil {
		g.pass(g2)
	}
	sctx, scancel := context.WithTimeout(bg, settleBound)
	defer scancel()
	if err := a.Settle(sctx); err != nil {
		t.Fatal(err)
	}
	if reports := reported(); len(reports) > 0 {
		t.Fatalf("x was given back, yet OnError was told: %v", reports)
	}
	if got := dataOf(t, srv); !got["x"] {
		t.Fatalf("x not back in the queue: %v", got)
	}
}

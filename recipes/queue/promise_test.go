package queue_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

// Promises of the package's docs that an adversarial review found broken:
// each test's comment gives the promise and the schedule that broke it
// (every test here fails on the code before the fix).

// afterFlowParker is a Parker (internal/park) that holds the blocking
// call it parks until a flow of ex has delivered a successful outcome
// (OnFlowEnd, closed in ended) and the job that delivered it has ended:
// the caller then looks, as a goroutine the Go scheduler ran a little
// later would.
type afterFlowParker struct {
	ended <-chan struct{}
	ex    *executor.Executor
	once  sync.Once
}

func (p *afterFlowParker) Wait(ready func() bool) {
	p.once.Do(func() {
		select {
		case <-p.ended:
		case <-time.After(failAfter): // (only when no flow succeeds)
		}
		// A flow submitted now runs after the job that delivered the
		// outcome: when it has run, the outcome is in.
		_, _ = executor.Await(context.Background(), p.ex, task.Value(task.Unit{}))
	})
	for !ready() { // (ready at once in every schedule here)
		runtime.Gosched()
	}
}

func (p *afterFlowParker) Go(f func(park.Parker)) { go f(p) }

// Client.Take's doc: "Take waits until ctx ends for an item and takes it
// (see Queue.Take). When ctx ends first the take is canceled and Take
// returns task.ErrCanceled or task.ErrDeadlineExceeded". And
// internal/blocking, the shared shape of the blocking faces: "A ctx that
// has ended already submits nothing".
//
// A Take called with a context canceled before the call submits the take
// anyway; when the executor runs it before the caller looks, it deletes
// the item and Take returns it: a call that should have done nothing
// consumed an item (at most once: the item left the queue for good).
func TestTakeWithAnEndedContext(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ended := make(chan struct{})
	var once sync.Once
	obs := &task.Observer{OnFlowEnd: func(fd task.FlowDone) {
		if fd.Err == nil {
			once.Do(func() { close(ended) })
		}
	}}
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(rctx) }()
	defer func() { ex.Close(); stop(); <-done }()
	a, err := queue.NewClient(ex, "/q")
	if err != nil {
		t.Fatal(err)
	}
	b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}))
	bg := context.Background()
	if _, err := b.Put(bg, []byte("x")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel() // ended before the call
	it, err := a.Take(park.NewContext(ctx, &afterFlowParker{ended: ended, ex: ex}))
	if err == nil {
		t.Fatalf("Take with a context canceled before the call took and returned %s (%q); want task.ErrCanceled and the item left in the queue (queue now holds %v)", it.Name, it.Data, dataOf(t, srv))
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Take with an ended context: %v, want its context's error", err)
	}
	if got := dataOf(t, srv); !got["x"] {
		t.Fatalf("after a Take with an ended context the queue holds %v, want x", got)
	}
}

// Item.Ack's doc: "ErrDeliveryLost: not applied, and the item is no
// longer this consumer's: the session ended before the ack was sent, or
// the consumer's marker was deleted (the item is, or will be, back in the
// queue), or the copy itself was gone"; ErrDeliveryLost's: "the item is
// no longer this consumer's ... so the item is (or will be) back in the
// queue for another delivery".
//
// An item taken through Client A is acked through Client B, on another
// executor (and session). The ack is not refused as a misuse (sibling
// Clients refuse a handle of another executor with task.ErrInvalidArgument):
// it reports ErrDeliveryLost while A's session lives, A's marker and the
// copy are in place, and the item will not come back: A's own Ack of it
// is applied right after, and the item is never delivered again.
func TestAckThroughAnotherClient(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	a := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(queue.AtLeastOnce))
	b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(queue.AtLeastOnce))
	bg, cancel := context.WithTimeout(context.Background(), failAfter)
	defer cancel()
	if _, err := a.Put(bg, []byte("x")); err != nil {
		t.Fatal(err)
	}
	it, err := a.Take(bg)
	if err != nil {
		t.Fatal(err)
	}
	errB := b.Ack(bg, it)
	markers, _ := srv.Children("/q.consumers")
	copies, _ := srv.Children("/q.inflight")
	errA := a.Ack(bg, it)
	if errors.Is(errB, queue.ErrDeliveryLost) && errA == nil {
		t.Fatalf("ack through another executor's Client: %v; yet the session lives, the marker (%v) and the copy (%v) are there, and the consumer's own Ack right after was applied: the item is acknowledged, never back in the queue (want task.ErrInvalidArgument, as a misuse)", errB, markers, copies)
	}
	if !errors.Is(errB, task.ErrInvalidArgument) {
		t.Fatalf("ack through another executor's Client: %v (then the owner's ack: %v), want task.ErrInvalidArgument", errB, errA)
	}
}

// The package doc: "Items are known by their incarnation, not their name,
// so these promises hold when the server hands a name out again (the
// directory deleted and created again ...)". TestStaleReadAcrossRestart's
// schedule (A's read of x1 delayed, B takes x1, the empty directory
// deleted, x2 put under x1's name), with the epoch's version at -1 (as a
// Java int after 2^32-1 raises; fakezk wraps it as ZooKeeper does): A's
// check of version -1 checked nothing, so its multi deleted (moved) x2 by
// name and version 0 and delivered x1's data: x1 delivered twice (at most
// once), x2 lost (at least once: also x1 acknowledged twice). The queue
// raises an epoch read at -1 before using it now. (An operator who
// deletes DIR.epoch with the directory hands its versions out again the
// same way: PROTOCOL.md says not to.)
func TestEpochAtMinusOneIsRaised(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(w *faultWorld) error // after x1's put
		restart func(w *faultWorld) error // after B's take of x1
	}{
		{"epoch-wrapped", func(w *faultWorld) error {
			return w.SetCounters("/q.epoch", -1, 0)
		}, func(w *faultWorld) error { return w.Server.AdminDelete("/q") }},
	} {
		for _, mode := range []queue.Mode{queue.AtMostOnce, queue.AtLeastOnce} {
			t.Run(tc.name+"/"+mode.String(), func(t *testing.T) {
				w := newFaultWorld(t, 3)
				const a, b, p = 0, 1, 2
				qa := mustNew(t, "/q", queue.WithMode(mode))
				qb := mustNew(t, "/q", queue.WithMode(mode))
				qp := mustNew(t, "/q", queue.WithMode(mode))
				if _, err := mustRun(t, w.World, p, qp.Put([]byte("x1"))); err != nil {
					t.Fatal(err)
				}
				if err := tc.prepare(w); err != nil {
					t.Fatal(err)
				}
				delayed := false
				w.hook = func(c *fakezk.Conn, req task.Request) {
					if g, ok := req.(*task.GetDataRequest); ok && c == w.Conns[a] && strings.HasPrefix(g.Path, "/q/") {
						w.hook, delayed = nil, true
						w.Server.Delay(c, time.Second)
					}
				}
				out := sim.Submit(w.World, a, qa.Take())
				w.Drive()
				if !delayed || out.Done {
					t.Fatalf("A's read was not delayed: %v %+v", delayed, out)
				}
				x1, err := mustRun(t, w.World, b, qb.Take())
				if err != nil || string(x1.Data) != "x1" {
					t.Fatalf("B's take: %v %v", x1, err)
				}
				if mode == queue.AtLeastOnce {
					if _, err := mustRun(t, w.World, b, x1.Ack()); err != nil {
						t.Fatal(err)
					}
				}
				if err := tc.restart(w); err != nil {
					t.Fatal(err)
				}
				if name, err := mustRun(t, w.World, p, qp.Put([]byte("x2"))); err != nil || name != "qn-0000000000" {
					t.Fatalf("put of x2: %s %v (the name must be x1's again)", name, err)
				}
				if !w.Settle(func() bool { return out.Done }) {
					t.Fatal("A's take never ended")
				}
				if out.Err == nil && string(out.V.Data) == "x1" {
					t.Fatalf("A's take delivered x1 (%s) a second time (B took it) and x2 is gone from the queue (it holds %v): the epoch's check passed across the directory's re-creation", out.V.Name, w.Children("/q"))
				}
				if out.Err != nil || string(out.V.Data) != "x2" {
					t.Fatalf("A's take: %+v, want x2", out)
				}
			})
		}
	}
}

// ErrExhausted's doc: the counter has run out "while the directory is not
// empty: items are queued, or nodes that are not items (another
// program's, which the queue skips and never deletes). Nothing was put.
// Puts go on once the directory holds neither"; PROTOCOL.md: "nodes that
// are not items (another program's, which the queue never deletes)".
//
// Another program's persistent node whose name starts with "qz-" (the
// prefix of the puts' ephemeral bumps) sits in an otherwise empty
// directory whose counter has run out. A Put's withdrawal deletes it as if
// it were one of its bumps, deletes the directory, restarts the counter
// and puts: the other program's node is gone.
func TestRunOutLeavesAnotherProgramsNode(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	a := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}))
	bg, cancel := context.WithTimeout(context.Background(), failAfter)
	defer cancel()
	if _, err := a.Put(bg, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Take(bg); err != nil {
		t.Fatal(err)
	}
	if err := srv.AdminCreate("/q/qz-settings", []byte("keep me"), 0); err != nil {
		t.Fatal(err)
	}
	st, _ := srv.NodeStat("/q")
	if err := srv.SetCounters("/q", st.Version, math.MaxInt32); err != nil {
		t.Fatal(err)
	}
	_, err := a.Put(bg, []byte("y"))
	if _, _, ok := srv.NodeData("/q/qz-settings"); !ok {
		t.Fatalf("another program's persistent node /q/qz-settings was deleted by a Put at the counter's end (the Put: %v; /q now holds %v)", err, dataOf(t, srv))
	}
	if !errors.Is(err, queue.ErrExhausted) {
		t.Fatalf("put with the counter run out and another program's node in the directory: %v, want ErrExhausted", err)
	}
}

// No doc sentence of this package covers zero values; the project's
// convention (sibling Clients: group, discovery) and this package's own
// TestBadInput ("Bad input gets a typed error at once, never a panic")
// do, and New refuses "/" as a directory. A zero Client panics in every
// method on the caller's goroutine, and a zero Queue's Put succeeds,
// creating an item at the root of the tree ("/qn-0000000000"), where New
// would have refused to put anything.
func TestZeroValues(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	a := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}))
	bg, cancel := context.WithTimeout(context.Background(), failAfter)
	defer cancel()
	call := func(name string, f func() error) {
		t.Helper()
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("%s panicked: %v; want a typed error (task.ErrInvalidArgument)", name, r)
			}
		}()
		if err := f(); !errors.Is(err, task.ErrInvalidArgument) && !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("%s: %v, want a typed error", name, err)
		}
	}
	zc := &queue.Client{}
	call("zero Client Put", func() error { _, err := zc.Put(bg, []byte("x")); return err })
	call("zero Client Take", func() error { _, err := zc.Take(bg); return err })
	call("zero Client Ack", func() error { return zc.Ack(bg, nil) })
	call("zero Client Settle", func() error { return zc.Settle(bg) })
	var zq queue.Queue
	call("zero Queue Put", func() error { _, err := executor.Await(bg, a.Executor(), zq.Put([]byte("x"))); return err })
	if root, _ := srv.Children("/"); len(root) > 0 {
		for _, n := range root {
			if strings.HasPrefix(n, "qn-") {
				t.Errorf("a zero Queue's Put created /%s at the root of the tree (root holds %v)", n, root)
			}
		}
	}
}

// Client.Take's doc: "A take whose ... move (at-least-once) was in flight
// when ctx ended settles it in the background and, if it took the item,
// gives it back: at-least-once to the queue under its own name ...
// Nothing taken is lost to a cancellation or kept in flight until the
// session ends".
//
// A take is canceled while its move is in flight; the move is applied,
// and before the give-back's multi an operator writes the in-flight copy
// (its version is 1 now). The give-back deletes the copy at version 0
// (giveback.go), fails, takes the failure for "given back already", and
// the item stays in flight under the live consumer until its session
// ends. (The return of a dead consumer's copies deletes at the version it
// read, and would not fail.)
func TestGiveBackAfterTheCopyWasWritten(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	hc := &armConn{Conn: srv.Connect(fakezk.ConnConfig{})}
	a, _, reports := reportingClient(t, srv, hc, queue.WithMode(queue.AtLeastOnce))
	b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(queue.AtLeastOnce))
	bg, cancelAll := context.WithTimeout(context.Background(), failAfter)
	defer cancelAll()
	if _, err := b.Put(bg, []byte("x")); err != nil {
		t.Fatal(err)
	}
	canceledInFlight(t, a, hc) // the move held, the take canceled
	heldBack := hc.arm(isGiveBack)
	hc.release() // the move: applied
	<-heldBack
	copies, _ := srv.Children("/q.inflight")
	if len(copies) != 1 {
		t.Fatalf("in flight: %v", copies)
	}
	if err := srv.AdminSetData("/q.inflight/"+copies[0], []byte("x")); err != nil {
		t.Fatal(err)
	}
	hc.release()
	if err := a.Settle(bg); err != nil {
		t.Fatal(err)
	}
	if got := dataOf(t, srv); !got["x"] {
		left, _ := srv.Children("/q.inflight")
		t.Fatalf("x, moved by a take canceled in flight, is not back in the queue (it holds %v; in flight: %v; reports: %v): kept in flight until the session ends", got, left, reports())
	}
}

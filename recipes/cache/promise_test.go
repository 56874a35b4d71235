package cache

// Promises of the package's docs tried by an adversarial review: the
// first three tests and the last two fail on the code before their fix;
// the other two held, and check what no other test does.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/task"
)

// hookConn is a client's connection with a hook called on every
// request it sends (on the executor goroutine, before the request goes).
type hookConn struct {
	*fakezk.Conn
	onDo func(task.Request)
}

func (r *hookConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if r.onDo != nil {
		r.onDo(req)
	}
	r.Conn.Do(req, done, watch)
}

// newHookWorld is newWorld with client 0's requests seen by the
// returned connection's hook.
func newHookWorld(t *testing.T, clients int) (*sim.World, *hookConn) {
	t.Helper()
	current = t
	var rc *hookConn
	w, err := sim.New(sim.Config{Seed: 7, Clients: clients, Wrap: func(i int, cn *fakezk.Conn) task.Conn {
		if i != 0 {
			return cn
		}
		rc = &hookConn{Conn: cn}
		return rc
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w, rc
}

// The package doc: "A stopped cache leaves nothing under its session, but
// ZooKeeper gives no way to withdraw a watch: those a cache had pending
// when it stopped stay ... until they fire"; PROTOCOL.md: "Stop removes
// the watch with RemoveWatches". A persistent recursive watch never
// fires its way out, and it can be withdrawn. Schedule: a recursive
// TreeCache's Start sends its AddWatch; before the reply is handled, Stop
// runs. The watch the server then registers is never removed: the
// session still holds a watch on the root after the stopped cache.
func TestRecursiveStopWhileSettingWatch(t *testing.T) {
	w, rc := newHookWorld(t, 2)
	must(sim.Run(w, 1, task.Create("/t", nil, task.Persistent)))
	tc := must(NewTree("/t", WithRecursive()))
	var stop *executor.Flow
	rc.onDo = func(req task.Request) {
		if _, ok := req.(*task.AddWatchRequest); ok && stop == nil {
			// The AddWatch is on its way: Stop runs before its reply.
			stop = executor.Submit(w.Execs[0], tc.Stop(), nil)
		}
	}
	start := sim.Submit(w, 0, tc.Start())
	w.Settle(func() bool { return start.Done })
	rc.onDo = nil
	if stop == nil {
		t.Fatal("no AddWatch was sent")
	}
	if !errors.Is(start.Err, ErrStopped) || !errors.Is(tc.Err(), ErrStopped) {
		t.Fatalf("Start: %v, Err %v; want ErrStopped", start.Err, tc.Err())
	}
	w.Drive()
	must(sim.Run(w, 1, task.Create("/t/x", nil, task.Persistent)))
	w.Drive()
	if _, err := sim.Run(w, 0, task.RemoveWatches("/t", task.WatcherAny)); !errors.Is(err, task.CodeNoWatcher) {
		t.Fatalf("RemoveWatches on the root after the cache stopped: %v; want NoWatcher (the stopped cache left its persistent recursive watch on the session)", err)
	}
}

// A Client not made by a constructor. Client: "Its methods are safe from
// any goroutine"; the constructors refuse a nil executor with
// task.ErrInvalidArgument, and the sibling recipes' Clients (group,
// barrier) refuse a zero Client with a typed error. Schedule: Start on a
// zero Client. It panics (a nil func call: Client.mk) instead of failing
// with task.ErrInvalidArgument.
func TestZeroClientStart(t *testing.T) {
	var cl Client
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return cl.Start(context.Background())
	}()
	if !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("Start on a zero Client: %v; want task.ErrInvalidArgument", err)
	}
}

// Stop: "Stop returns a task that stops the cache: its flows end,
// waiting Nexts fail with ErrStopped. It is idempotent"; Next "fails
// with the cache's error once the cache has ended"; the brief's rule: a
// typed error within a stated time, never a hang. Schedule: a task-face
// cache is stopped before it is started, then started. Start waits for
// ever (engine.start does not look at Err: its follower never reads,
// the cache having ended, and nothing resumes it), where it should fail
// with ErrStopped as Next does; it also subscribes to the session's
// events and leaves a follower scope under the session scope that
// nothing closes.
func TestStartAfterStop(t *testing.T) {
	w := newWorld(t, 2)
	must(sim.Run(w, 1, c.Seq(task.Create("/d", nil, task.Persistent), task.Create("/d/a", nil, task.Persistent))))
	for _, kind := range []string{"children", "node", "tree"} {
		var start task.Task[task.Unit]
		var stop task.Task[task.Unit]
		switch kind {
		case "children":
			cc := must(NewChildren("/d"))
			start, stop = c.Map(cc.Start(), func(*ChildrenCache) task.Unit { return task.Unit{} }), cc.Stop()
		case "node":
			nc := must(NewNode("/d/a"))
			start, stop = c.Map(nc.Start(), func(*NodeCache) task.Unit { return task.Unit{} }), nc.Stop()
		default:
			tc := must(NewTree("/d"))
			start, stop = c.Map(tc.Start(), func(*TreeCache) task.Unit { return task.Unit{} }), tc.Stop()
		}
		must(sim.Run(w, 0, stop))
		out := sim.Submit(w, 0, start)
		w.Settle(func() bool { return out.Done })
		if !out.Done || !errors.Is(out.Err, ErrStopped) {
			t.Errorf("%s: Start after Stop: ended %v, %v; want ErrStopped at once", kind, out.Done, out.Err)
		}
	}
}

// HOLDS (no other test checks it): a Client's blocking methods called on
// the executor's own goroutine (here from another cache's OnEvent) fail
// at once with executor.ErrOnExecutor instead of waiting for ever; Stop
// is started all the same.
func TestClientOnExecutorGoroutine(t *testing.T) {
	w := newWorld(t, 2)
	must(sim.Run(w, 1, c.Seq(task.Create("/d", nil, task.Persistent), task.Create("/d/a", nil, task.Persistent))))
	cl := must(NewChildrenClient(w.Execs[0], "/d"))
	fresh := must(NewChildrenClient(w.Execs[0], "/d"))
	started := false
	w.Go(0, func(a *sim.Actor) {
		if err := cl.Start(a.Context()); err != nil {
			t.Errorf("start: %v", err)
		}
		started = true
	})
	if !w.Settle(func() bool { return started }) {
		t.Fatal("start did not end")
	}
	var errs []error
	nc := must(NewNode("/d/a", WithOnEvent(func(Event) {
		if errs != nil {
			return
		}
		ctx := context.Background()
		_, nerr := cl.Next(ctx)
		errs = append(errs, fresh.Start(ctx), nerr, cl.Stop(ctx))
	})))
	must(sim.Run(w, 0, nc.Start()))
	w.Drive()
	for i, err := range errs {
		if !errors.Is(err, executor.ErrOnExecutor) {
			t.Errorf("call %d on the executor goroutine: %v, want ErrOnExecutor", i, err)
		}
	}
	if len(errs) != 3 {
		t.Fatalf("OnEvent calls: %v", errs)
	}
	if !errors.Is(cl.Err(), ErrStopped) {
		t.Errorf("Stop on the executor goroutine did not stop the cache: Err %v", cl.Err())
	}
	must(sim.Run(w, 0, nc.Stop()))
}

// HOLDS (no other test checks Next and Stop with a ctx ended before the
// call): Next with an ended ctx and a difference ready fails with ctx's
// error and loses nothing (the next Next returns it); Stop with an ended
// ctx returns ctx's error and stops the cache all the same.
func TestClientEndedCtx(t *testing.T) {
	w := newWorld(t, 2)
	must(sim.Run(w, 1, c.Seq(task.Create("/d", nil, task.Persistent), task.Create("/d/a", nil, task.Persistent))))
	cl := must(NewChildrenClient(w.Execs[0], "/d"))
	var ended, first, second error
	var got Change
	done := false
	w.Go(0, func(a *sim.Actor) {
		defer func() { done = true }()
		if err := cl.Start(a.Context()); err != nil {
			t.Errorf("start: %v", err)
			return
		}
		ctx, cancel := context.WithCancel(a.Context())
		cancel()
		_, first = cl.Next(ctx)
		got, ended = cl.Next(a.Context())
		second = cl.Stop(ctx)
		_ = a.Wait(a.Context(), cl.Done())
	})
	if !w.Settle(func() bool { return done }) {
		t.Fatal("actor did not end")
	}
	if !errors.Is(first, context.Canceled) {
		t.Errorf("Next with an ended ctx: %v, want ctx's error", first)
	}
	if ended != nil || len(got.Added) != 1 {
		t.Errorf("the next Next: added %v, %v; want [/d/a]", paths(got.Added), ended)
	}
	if !errors.Is(second, context.Canceled) || !errors.Is(cl.Err(), ErrStopped) {
		t.Errorf("Stop with an ended ctx: %v, Err %v; want ctx's error and the cache stopped", second, cl.Err())
	}
}

// Client.Start: "If the session expires before that, it starts again on
// the next session"; the package doc: "On session expiry ... the cache
// reads everything again, so changes made meanwhile, deletes and
// re-creations included, are reported"; WithOnEvent: fn is "called for
// every change the cache sees ... once per change". Schedule: a
// ChildrenClient of /d (children a, b) with OnEvent starts; as the cache
// reports /d/a Added (its first read), an operator deletes /d/a and the
// session expires. Start started again, with a new cache, on the new
// session and succeeded: the OnEvent stream said /d/a Added and never
// Removed (it held /d/a; the cache and the server did not). The Client
// keeps one cache across the expiry now.
func TestClientStartAcrossAnExpiryIsOneHistory(t *testing.T) {
	w := newWorld(t, 2)
	must(sim.Run(w, 1, c.Seq(task.Create("/d", nil, task.Persistent),
		c.Seq(task.Create("/d/a", nil, task.Persistent), task.Create("/d/b", nil, task.Persistent)))))
	model := map[string]Node{}
	var events []string
	fired := false
	cl := must(NewChildrenClient(w.Execs[0], "/d", WithOnEvent(func(ev Event) {
		events = append(events, ev.String())
		if err := applyEvent(model, ev); err != nil {
			t.Error(err)
		}
		if !fired && ev.Path == "/d/a" {
			fired = true
			if err := w.Server.AdminDelete(w.ServerPath("/d/a")); err != nil {
				t.Error(err)
			}
			w.Server.Expire(w.Conns[0])
		}
	})))
	var startErr error
	started := false
	w.Go(0, func(a *sim.Actor) {
		startErr = cl.Start(a.Context())
		started = true
	})
	if !w.Settle(func() bool { return started }) {
		t.Fatal("Start did not return")
	}
	if startErr != nil {
		t.Fatalf("Start: %v", startErr)
	}
	if !fired {
		t.Fatal("the schedule did not happen: no expiry")
	}
	w.Settle(func() bool { return len(cl.Current()) == 1 })
	if got := paths(cl.Current()); len(got) != 1 || got[0] != "/d/b" {
		t.Fatalf("cache holds %v, want [/d/b]", got)
	}
	if got := sortedPaths(model); len(got) != 1 {
		t.Fatalf("OnEvent stream %v leaves %v, the cache and the server hold [/d/b]: the delete of /d/a made while the session was expiring was never reported", events, got)
	}
}

// Client.Next: "A Next that returns ctx's error returns no difference:
// the next Next reports what it would have (also when ctx ended just as
// the difference was handed to it)"; ChildrenCache.Next: "concurrent
// Nexts are served in turn, each with what changed since the one before";
// the Client's methods "are safe from any goroutine". Schedule (two
// goroutines calling one Client's Next, A first): /d/x is created; in the
// job that hands the snapshot to A, A's ctx ends and A cancels its flow
// (as in TestAdv4ClientNextCanceledAsChangeArrives); A's flow ends with
// the difference all the same. Before A's hand-back (giveBack) runs,
// /d/y is created. On the code before the fix B was served then, from
// the snapshot A was handed, and A's hand-back, coming after, was
// dropped: B reported [/d/y] only, and no Next ever reported /d/x. B now
// waits until A has handed its difference back, and reports both.
func TestNextCanceledBesideAnotherNextIsReportedAgain(t *testing.T) {
	w := newWorld(t, 2)
	must(sim.Run(w, 1, task.Create("/d", nil, task.Persistent)))
	armed := false
	var cancelA context.CancelFunc
	pA := &stepParker{at: make(chan int), on: make(chan struct{})}
	pB := &stepParker{at: make(chan int), on: make(chan struct{})}
	cl := must(NewChildrenClient(w.Execs[0], "/d", WithOnSynced(func() {
		if !armed {
			return
		}
		armed = false
		cancelA() // in the job that hands the snapshot to A
		pA.on <- struct{}{}
		if n := <-pA.at; n != 2 {
			t.Errorf("A parked at wait %d, want 2 (after it canceled its flow)", n)
		}
	})))
	started := false
	w.Go(0, func(a *sim.Actor) {
		if err := cl.Start(a.Context()); err != nil {
			t.Errorf("start: %v", err)
		}
		started = true
	})
	if !w.Settle(func() bool { return started }) {
		t.Fatal("start did not end")
	}
	type outcome struct {
		ch  Change
		err error
	}
	ctxA, cA := context.WithCancel(park.NewContext(context.Background(), pA))
	defer cA()
	cancelA = cA
	outA := make(chan outcome, 1)
	go func() { ch, err := cl.Next(ctxA); outA <- outcome{ch, err} }()
	if n := <-pA.at; n != 1 {
		t.Fatalf("A parked at wait %d, want 1", n)
	}
	w.Drive() // A waits in the cache, first
	ctxB, cB := context.WithCancel(park.NewContext(context.Background(), pB))
	defer cB()
	outB := make(chan outcome, 1)
	go func() { ch, err := cl.Next(ctxB); outB <- outcome{ch, err} }()
	if n := <-pB.at; n != 1 {
		t.Fatalf("B parked at wait %d, want 1", n)
	}
	w.Drive() // B waits in the cache, second
	pB.on <- struct{}{}
	armed = true
	must(sim.Run(w, 1, task.Create("/d/x", nil, task.Persistent)))
	w.Drive()
	if armed {
		t.Fatal("no snapshot was handed over")
	}
	// A's flow has ended with /d/x; A has not yet taken it. /d/y comes:
	// B is not served from the snapshot A was handed while A has yet to
	// take it or give it back.
	must(sim.Run(w, 1, task.Create("/d/y", nil, task.Persistent)))
	w.Drive()
	select {
	case b := <-outB:
		t.Fatalf("B served %v (%v) while A's difference was being handed over", paths(b.ch.Added), b.err)
	default:
	}
	pA.on <- struct{}{} // A takes its flow's outcome and hands it back
	a := <-outA
	w.Drive()
	if !errors.Is(a.err, task.ErrCanceled) {
		t.Fatalf("A: %v, %v; want ctx's error", paths(a.ch.Added), a.err)
	}
	b := <-outB
	if b.err != nil || !slices.Contains(paths(b.ch.Added), "/d/x") || !slices.Contains(paths(b.ch.Added), "/d/y") {
		t.Fatalf("A returned %v; B returned added %v (%v): want /d/x, handed back, and /d/y", a.err, paths(b.ch.Added), b.err)
	}
}

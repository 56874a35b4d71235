package config

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// held holds client 0's requests on /cfg/b back while on.
type held struct {
	*fakezk.Conn
	on   bool
	reqs int
}

func (c *held) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if c.on && req.NodePath() == "/cfg/b" {
		c.reqs++
		return // never sent
	}
	c.Conn.Do(req, done, watch)
}

// heldWorld is a world of two clients, /cfg holding a and b at "0";
// client 0's requests on /cfg/b are held back while h.on.
func heldWorld(t *testing.T) (*sim.World, *held) {
	t.Helper()
	h := &held{}
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: func(i int, c *fakezk.Conn) task.Conn {
		if i == 0 && h.Conn == nil {
			h.Conn = c
			return h
		}
		return c
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	run(t, w, 1, Update("/cfg", map[string][]byte{"a": []byte("0"), "b": []byte("0")}))
	return w, h
}

// tick moves w by one small step: one scheduling step of the server, one
// job of each executor, and, when none of them had anything to do, the
// clock to its next timer. It reports whether anything was left to do.
func tick(w *sim.World) bool {
	ran := w.Server.Step()
	for _, ex := range w.Execs {
		if ex.Step() {
			ran = true
		}
	}
	if !ran {
		return w.Clock.AdvanceToNext()
	}
	return true
}

// watchKinds are the watchers of /cfg a user can start.
var watchKinds = []struct {
	name string
	mk   func(h func(Snapshot)) task.Task[*Watcher]
}{
	{"Watch", func(h func(Snapshot)) task.Task[*Watcher] { return Watch("/cfg/a", h) }},
	{"WatchDir", func(h func(Snapshot)) task.Task[*Watcher] { return WatchDir("/cfg", DirOptions{}, h) }},
	{"WatchDirMarker", func(h func(Snapshot)) task.Task[*Watcher] {
		return WatchDir("/cfg", DirOptions{Marker: true}, h)
	}},
	{"Subtree", func(h func(Snapshot)) task.Task[*Watcher] {
		return WatchDir("/cfg", DirOptions{Subtree: true}, h)
	}},
	{"Recursive", func(h func(Snapshot)) task.Task[*Watcher] {
		return WatchDir("/cfg", DirOptions{Subtree: true, Recursive: true}, h)
	}},
}

// The package doc: "A watcher ends (Err, Done) on Stop, on the executor's
// close (task.ErrClosed), or on an error no retry settles." The reader's
// executor stops (Shutdown) at every step n after a watcher of each kind
// is started and an update of its configuration is submitted by another
// client: while its first read is out, while it waits for a change,
// while the read after the change's notification is out, just after the
// change was delivered. The task then has its outcome (the Watcher, or
// task.ErrClosed), a Watcher it gave has ended (Done closed, Err
// task.ErrClosed), and its handler is not called once the executor has
// stopped. Holds.
func TestWatcherEndsWhenTheExecutorClosesAtEveryStep(t *testing.T) {
	for _, kind := range watchKinds {
		t.Run(kind.name, func(t *testing.T) {
			var started, refused, changed int
			for n := 0; n < 80; n++ {
				w := newWorld(t, 2)
				run(t, w, 1, Update("/cfg", map[string][]byte{"a": []byte("1")}))
				var got []Snapshot
				stopped := false
				o := sim.Submit(w, 0, kind.mk(func(s Snapshot) {
					if stopped {
						t.Errorf("step %d: a snapshot delivered after the executor stopped: %v", n, s.Values)
					}
					got = append(got, s)
				}))
				up := sim.Submit(w, 1, Update("/cfg", map[string][]byte{"a": []byte("2")}))
				for range n {
					tick(w)
				}
				w.Execs[0].Shutdown()
				stopped = true
				w.Settle(func() bool { return up.Done })
				if !o.Done {
					t.Fatalf("step %d: the watch task has no outcome after the executor stopped", n)
				}
				if o.Err != nil {
					if !errors.Is(o.Err, task.ErrClosed) {
						t.Fatalf("step %d: the watch task failed with %v, want task.ErrClosed", n, o.Err)
					}
					refused++
					continue
				}
				started++
				wt := o.V
				if !closedNow(wt.Done()) || !errors.Is(wt.Err(), task.ErrClosed) {
					t.Fatalf("step %d: after the executor stopped, the watcher: done %v, Err %v; want ended with task.ErrClosed",
						n, closedNow(wt.Done()), wt.Err())
				}
				if len(got) > 0 && string(got[len(got)-1].Values["a"])+string(got[len(got)-1].Data) == "2" {
					changed++
				}
			}
			t.Logf("%d watchers started, then ended; %d tasks ended with ErrClosed; %d had the change", started, refused, changed)
			if started == 0 || refused == 0 || changed == 0 {
				t.Error("the executor never stopped before the watcher started, or always did, or never after the change")
			}
		})
	}
}

// Reload's doc: Done "is closed when the reloader has ended: its watcher
// has ended (Stop, the executor's close, ...), and the run that was going
// then has ended too, cleanups included". The reloader's executor stops
// at every step n after a new version is submitted by another client
// (the run of version 1 going, a cleanup of its own registered with
// Scope.Defer that takes a while): while the watcher reads the change,
// while run 1 is canceled with ErrReloaded, while its cleanup runs, as
// run 2 starts, while it runs. Every run started has ended, Done is
// closed, Err is task.ErrClosed, no run is active, and each run's cleanup
// ran or was reported with task.ErrClosed (executor.Close: deferred
// cleanups do not run their steps). Holds.
func TestReloaderEndsWhenTheExecutorClosesAtEveryStep(t *testing.T) {
	var seen [4]int // executor stopped with: run 1 going, run 1 ending, run 2 going, run 2 ended
	for n := 0; n < 120; n++ {
		w := newWorld(t, 2)
		run(t, w, 1, Update("/cfg", map[string][]byte{"v": []byte("1")}))
		var starts, ends, cleaned int
		apply := func(s Snapshot) task.Task[task.Unit] {
			return func(sc *task.Scope, k task.Cont[task.Unit]) {
				starts++
				sc.Defer(task.Task[task.Unit](func(cs *task.Scope, ck task.Cont[task.Unit]) {
					task.Run(cs, task.Exists("/cfg"), func(*task.Stat, error) {
						cleaned++
						ck(task.Unit{}, nil)
					})
				}))
				task.Suspend(sc, func(_ task.Unit, err error) {
					ends++
					k(task.Unit{}, err)
				}, func(task.Cont[task.Unit]) func() { return nil })
			}
		}
		r := run(t, w, 0, Reload("/cfg", DirOptions{}, apply))
		up := sim.Submit(w, 1, Update("/cfg", map[string][]byte{"v": []byte("2")}))
		for range n {
			tick(w)
		}
		switch {
		case starts == 1 && ends == 0:
			seen[0]++
		case starts == 1:
			seen[1]++
		case ends < starts:
			seen[2]++
		default:
			seen[3]++
		}
		w.Execs[0].Shutdown()
		w.Settle(func() bool { return up.Done })
		closedErrs := 0
		for _, err := range w.Errs {
			if errors.Is(err, task.ErrClosed) {
				closedErrs++
			}
		}
		state := fmt.Sprintf("step %d: runs started %d, ended %d, cleaned %d, cleanups reported closed %d; Done %v, Err %v, Active %d (errors %v)",
			n, starts, ends, cleaned, closedErrs, closedNow(r.Done()), r.Err(), r.Active(), w.Errs)
		if !closedNow(r.Done()) || !errors.Is(r.Err(), task.ErrClosed) || r.Active() != 0 {
			t.Fatalf("%s: want Done closed, Err task.ErrClosed, no run active", state)
		}
		if ends != starts || cleaned+closedErrs < starts {
			t.Fatalf("%s: want every run ended and each cleanup run or reported closed", state)
		}
	}
	t.Logf("executor stopped with run 1 going %d times, run 1 ending %d, run 2 going %d, run 2 ended %d", seen[0], seen[1], seen[2], seen[3])
	if seen[0] == 0 || seen[1] == 0 || seen[2] == 0 {
		t.Error("the steps drawn miss a point")
	}
}

// The executor closed from inside one of its jobs (executor.Close: "the
// executor stops before its next job"): by a watcher's handler as a
// change is delivered, by Reload's apply as the run for a new version
// starts, and by the cleanup (Scope.Defer) of the run a new version
// replaces. The watcher, or the Reloader, ends as the package doc says:
// Done closed, Err task.ErrClosed; no run of the Reloader is left going.
// Holds.
func TestEndsWhenTheExecutorClosesFromAJob(t *testing.T) {
	for _, kind := range watchKinds {
		t.Run("handler/"+kind.name, func(t *testing.T) {
			w := newWorld(t, 2)
			run(t, w, 1, Update("/cfg", map[string][]byte{"a": []byte("1")}))
			n, after := 0, 0
			closed := false
			wt := run(t, w, 0, kind.mk(func(Snapshot) {
				if closed {
					after++
				}
				if n++; n == 2 {
					w.Execs[0].Close()
					closed = true
				}
			}))
			run(t, w, 1, Update("/cfg", map[string][]byte{"a": []byte("2")}))
			run(t, w, 1, Update("/cfg", map[string][]byte{"a": []byte("3")}))
			w.Settle(func() bool { return closedNow(wt.Done()) })
			if !closed || !closedNow(wt.Done()) || !errors.Is(wt.Err(), task.ErrClosed) || after > 0 {
				t.Fatalf("closed in the handler %v: done %v, Err %v, %d deliveries after; want ended with task.ErrClosed and none after",
					closed, closedNow(wt.Done()), wt.Err(), after)
			}
		})
	}
	for _, where := range []string{"apply", "cleanup"} {
		t.Run("reload/"+where, func(t *testing.T) {
			w := newWorld(t, 2)
			run(t, w, 1, Update("/cfg", map[string][]byte{"v": []byte("1")}))
			var starts, ends int
			apply := func(s Snapshot) task.Task[task.Unit] {
				return func(sc *task.Scope, k task.Cont[task.Unit]) {
					starts++
					if where == "apply" && starts == 2 {
						w.Execs[0].Close()
					}
					sc.Defer(task.Task[task.Unit](func(cs *task.Scope, ck task.Cont[task.Unit]) {
						if where == "cleanup" {
							w.Execs[0].Close()
						}
						ck(task.Unit{}, nil)
					}))
					task.Suspend(sc, func(_ task.Unit, err error) {
						ends++
						k(task.Unit{}, err)
					}, func(task.Cont[task.Unit]) func() { return nil })
				}
			}
			r := run(t, w, 0, Reload("/cfg", DirOptions{}, apply))
			run(t, w, 1, Update("/cfg", map[string][]byte{"v": []byte("2")}))
			w.Settle(func() bool { return closedNow(r.Done()) })
			t.Logf("runs started %d (Runs %d), ended %d", starts, r.Runs(), ends)
			if !closedNow(r.Done()) || !errors.Is(r.Err(), task.ErrClosed) || r.Active() != 0 || ends != starts {
				t.Fatalf("closed in %s: done %v, Err %v, active %d, runs started %d, ended %d; want ended with task.ErrClosed, every run ended",
					where, closedNow(r.Done()), r.Err(), r.Active(), starts, ends)
			}
		})
	}
}

// Update's and UpdateMarked's docs: a task "calls the continuation
// exactly once" (task), and the executor's close ends every flow in
// flight with task.ErrClosed. A writer on client 1 waits for the marker
// of a marked update of client 0 (its entry b held back), or a writer on
// client 0 has its connection cut (its write's reply lost: it writes
// again after the reconnect): the writer's executor stops at every step
// n. The update has its outcome: nil, if it completed before, or
// task.ErrClosed. Holds.
func TestUpdateEndsWhenTheExecutorClosesAtEveryStep(t *testing.T) {
	for _, marked := range []bool{false, true} {
		for _, fault := range []string{"marker", "cut"} {
			t.Run(fmt.Sprintf("marked=%v/%s", marked, fault), func(t *testing.T) {
				var ok, closed int
				for n := 0; n < 60; n++ {
					w, h := heldWorld(t)
					if fault == "marker" {
						h.on = true
						sim.Submit(w, 0, UpdateMarked("/cfg", map[string][]byte{"a": []byte("m"), "b": []byte("m")}))
						w.Settle(func() bool { return h.reqs > 0 })
					}
					writer := 1
					if fault == "cut" {
						writer = 0
					}
					values := map[string][]byte{"a": []byte("u"), "b": []byte("u")}
					up := Update("/cfg", values)
					if marked {
						up = UpdateMarked("/cfg", values)
					}
					o := sim.Submit(w, writer, up)
					if fault == "cut" {
						w.Execs[0].Step()
						w.Server.Partition(w.Conns[0], 300*time.Millisecond, true)
					}
					for range n {
						tick(w)
					}
					w.Execs[writer].Shutdown()
					w.Drive()
					switch {
					case !o.Done:
						t.Fatalf("step %d: the update has no outcome after the executor stopped", n)
					case o.Err == nil:
						ok++
					case errors.Is(o.Err, task.ErrClosed):
						closed++
					default:
						t.Fatalf("step %d: the update failed with %v, want task.ErrClosed", n, o.Err)
					}
				}
				t.Logf("%d updates done before the close, %d ended with task.ErrClosed", ok, closed)
				if closed == 0 {
					t.Error("the executor never stopped during the update")
				}
			})
		}
	}
}

// gate holds every request of client 0 back while on (never sent).
type gate struct {
	task.Conn
	on   bool
	reqs int
}

func (g *gate) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if g.on {
		g.reqs++
		return
	}
	g.Conn.Do(req, done, watch)
}

// The blocking face when the executor stops, and when the caller's ctx
// ends, during each call: Client's WatchDir and Watch while another
// client updates the configuration, a Reader's Next waiting for a change
// another client makes, Update and UpdateMarked waiting for an
// operator's marker, and a Reader's Stop. The end comes at every step n
// of the world after the call has begun ("steps"), while every request of
// the caller's client is held back ("held": its first read, the read of
// the change, the listing that finds the marker, the stop's removal of
// its watches out), or, for Next, with the change delivered before Next
// is called ("pending"). Each call returns, with its outcome, with
// task.ErrClosed (the executor stopped: the watcher's end, for Next) or
// with its ctx's error; a Reader's Next called again and again then
// returns what was delivered and ends with the watcher's end once the
// executor has stopped (task.ErrClosed, or ErrStopped after a Stop that
// returned nil): no call waits for ever, and no Reader is left open
// with its executor gone. Holds.
func TestClientCallsEndWhenTheExecutorClosesAtEveryStep(t *testing.T) {
	type call func(ctx context.Context, a *sim.Actor, c *Client, r *Reader) error
	calls := []struct {
		name string
		f    call
	}{
		{"WatchDir", func(ctx context.Context, a *sim.Actor, c *Client, _ *Reader) error {
			r, err := c.WatchDir(ctx, DirOptions{Marker: true})
			if err == nil {
				if derr := drain(ctx, a, r); derr != nil && ctx.Err() == nil && !errors.Is(derr, task.ErrClosed) {
					return fmt.Errorf("the new Reader's Next: %w", derr)
				}
			}
			return err
		}},
		{"Watch", func(ctx context.Context, a *sim.Actor, c *Client, _ *Reader) error {
			r, err := c.Watch(ctx)
			if err == nil {
				if derr := drain(ctx, a, r); derr != nil && ctx.Err() == nil && !errors.Is(derr, task.ErrClosed) {
					return fmt.Errorf("the new Reader's Next: %w", derr)
				}
			}
			return err
		}},
		{"Next", func(ctx context.Context, _ *sim.Actor, _ *Client, r *Reader) error {
			_, err := r.Next(ctx)
			return err
		}},
		{"Update", func(ctx context.Context, _ *sim.Actor, c *Client, _ *Reader) error {
			return c.Update(ctx, map[string][]byte{"a": []byte("u")})
		}},
		{"UpdateMarked", func(ctx context.Context, _ *sim.Actor, c *Client, _ *Reader) error {
			return c.UpdateMarked(ctx, map[string][]byte{"a": []byte("u")})
		}},
		{"Stop", func(ctx context.Context, _ *sim.Actor, _ *Client, r *Reader) error {
			return r.Stop(ctx)
		}},
	}
	for _, cl := range calls {
		for _, end := range []string{"close", "ctx"} {
			for _, at := range []string{"steps", "held", "pending"} {
				if at == "pending" && cl.name != "Next" || at == "held" && cl.name == "Stop" {
					continue // (a Stop sends no request: recipes/cache)
				}
				t.Run(cl.name+"/"+end+"/"+at, func(t *testing.T) {
					outcomes := map[string]int{}
					last := 24
					if at != "steps" {
						last = 1
					}
					for n := 0; n < last; n++ {
						g := &gate{}
						w, err := sim.New(sim.Config{Seed: uint64(n + 1), Clients: 2, Wrap: func(i int, c *fakezk.Conn) task.Conn {
							if i == 0 && g.Conn == nil {
								g.Conn = c
								return g
							}
							return c
						}})
						if err != nil {
							t.Fatal(err)
						}
						defer w.Close()
						run(t, w, 1, Update("/cfg", map[string][]byte{"a": []byte("1")}))
						c := mustClient(t, w.Execs[0], "/cfg")
						var r *Reader
						began, done := false, false
						resume := make(chan struct{})
						var callErr, nextErr error
						w.Go(0, func(a *sim.Actor) {
							defer func() { done = true }()
							var oerr error
							if r, oerr = c.WatchDir(a.Context(), DirOptions{}); oerr != nil {
								t.Errorf("WatchDir: %v", oerr)
								return
							}
							if _, oerr = r.Next(a.Context()); oerr != nil {
								t.Errorf("the first Next: %v", oerr)
								return
							}
							if cl.name == "Update" || cl.name == "UpdateMarked" {
								if err := w.Server.AdminCreate("/cfg/"+MarkerName, []byte("operator"), 0); err != nil {
									t.Error(err)
									return
								}
							}
							ctx := a.Context()
							if end == "ctx" {
								var cancel context.CancelFunc
								ctx, cancel = a.CancelAfterSteps(ctx, n)
								defer cancel()
							}
							began = true
							g.on = at == "held"
							if at == "pending" {
								if err := a.Wait(a.Context(), resume); err != nil {
									t.Error(err)
									return
								}
								if end == "ctx" {
									var cancel context.CancelFunc
									ctx, cancel = a.WithCancel(ctx)
									cancel()
								}
							}
							callErr = cl.f(ctx, a, c, r)
							nextErr = drain(a.Context(), a, r)
						})
						for !began {
							w.Step()
						}
						sim.Submit(w, 1, Update("/cfg", map[string][]byte{"a": []byte("2")}))
						switch at {
						case "steps":
							if end == "close" {
								for range n {
									w.Step()
								}
							}
						case "held":
							w.Settle(func() bool { return g.reqs > 0 })
							if g.reqs == 0 {
								t.Fatal("no request held")
							}
						case "pending":
							seq := func() uint64 { r.mu.Lock(); defer r.mu.Unlock(); return r.seq }
							before := seq()
							for seq() == before && tick(w) {
							}
							if seq() == before {
								t.Fatal("the change was never delivered")
							}
						}
						if end == "close" {
							w.Execs[0].Shutdown()
						}
						close(resume)
						if !w.Settle(func() bool { return done }) {
							t.Fatalf("step %d: the call, or a Next after it, never returned (call: %v)", n, callErr)
						}
						switch {
						case callErr == nil:
							outcomes["nil"]++
						case end == "close" && errors.Is(callErr, task.ErrClosed):
							outcomes["closed"]++
						case end == "ctx" && (errors.Is(callErr, task.ErrCanceled) || errors.Is(callErr, context.Canceled)):
							outcomes["ctx"]++
						default:
							t.Fatalf("step %d: %s returned %v", n, cl.name, callErr)
						}
						switch {
						case end == "close" && errors.Is(nextErr, task.ErrClosed):
						case cl.name == "Stop" && callErr == nil && errors.Is(nextErr, ErrStopped):
						case end == "ctx" && cl.name != "Stop" && nextErr == nil:
						case end == "ctx" && cl.name == "Stop" && errors.Is(nextErr, ErrStopped):
						default:
							t.Fatalf("step %d: after %s returned %v, Next ended with %v", n, cl.name, callErr, nextErr)
						}
					}
					t.Logf("outcomes: %v", outcomes)
				})
			}
		}
	}
}

// drain calls r.Next until it fails and returns that error: the watcher's
// end. With no end in sight (a Reader that runs on), it returns nil once
// the world has been idle for a while.
func drain(ctx context.Context, a *sim.Actor, r *Reader) error {
	for {
		wctx, cancel := a.WithTimeout(ctx, time.Minute)
		_, err := r.Next(wctx)
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, task.ErrDeadlineExceeded) && ctx.Err() == nil:
			return nil
		default:
			return err
		}
	}
}

// Reload's doc: a run's scope is canceled when the Reloader's watcher
// ends, "Cleanups it registers with Scope.Defer run when it ends", and
// Done closes once the run "has ended too, cleanups included". The
// executor stops while run 1 goes: its scope is canceled with
// task.ErrClosed (the watcher's end), and its cleanup does not run its
// steps: as for every flow of a closed executor (executor.Close), it is
// reported to Config.OnError with task.ErrClosed. A component that must
// let go of something of its own process on every end (a channel, a
// file) does it when its task gets its scope's error, or in
// Scope.OnDone, which both run.
func TestReloadRunOnTheExecutorsClose(t *testing.T) {
	w := newWorld(t, 1)
	run(t, w, 0, Update("/cfg", map[string][]byte{"v": []byte("1")}))
	var scopeErr, onDone error
	cleaned := false
	apply := func(s Snapshot) task.Task[task.Unit] {
		return func(sc *task.Scope, k task.Cont[task.Unit]) {
			sc.Defer(task.Func(func(*task.Scope) (task.Unit, error) {
				cleaned = true
				return task.Unit{}, nil
			}))
			sc.OnDone(func(err error) { onDone = err })
			task.Suspend(sc, func(_ task.Unit, err error) {
				scopeErr = err
				k(task.Unit{}, err)
			}, func(task.Cont[task.Unit]) func() { return nil })
		}
	}
	r := run(t, w, 0, Reload("/cfg", DirOptions{}, apply))
	w.Settle(func() bool { return r.Active() == 1 })
	w.Execs[0].Shutdown()
	if !closedNow(r.Done()) || !errors.Is(r.Err(), task.ErrClosed) || r.Active() != 0 {
		t.Fatalf("after the executor stopped: Done %v, Err %v, active %d; want ended with task.ErrClosed", closedNow(r.Done()), r.Err(), r.Active())
	}
	if !errors.Is(scopeErr, task.ErrClosed) || !errors.Is(onDone, task.ErrClosed) {
		t.Fatalf("the run's task ended with %v, its OnDone with %v; want task.ErrClosed", scopeErr, onDone)
	}
	reported := 0
	for _, err := range w.Errs {
		if errors.Is(err, task.ErrClosed) {
			reported++
		}
	}
	if cleaned || reported != 1 {
		t.Fatalf("the run's cleanup ran %v, reported with task.ErrClosed %d times (errors %v); want not run, reported once", cleaned, reported, w.Errs)
	}
}

// On a running executor (fakezk in real time), Run's ctx is canceled
// while a Reloader reloads (its runs' cleanups take a while), watchers of
// every kind follow the changes, and a blocking Reader waits in Next,
// again and again, at whatever point the goroutines have reached: once
// Run has returned, the Reloader's and every watcher's Done is closed
// with Err task.ErrClosed, and the Reader's Next returns (the snapshots
// delivered, then task.ErrClosed). Holds.
func TestEverythingEndsWhenRunsCtxEnds(t *testing.T) {
	for i := range 20 {
		srv := fakezk.New(fakezk.Config{Async: true})
		bg, stopAll := context.WithTimeout(context.Background(), 30*time.Second)
		writer, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 2})
		if err != nil {
			t.Fatal(err)
		}
		wrote := make(chan struct{})
		go func() { defer close(wrote); _ = writer.Run(bg) }()
		ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1,
			OnError: func(error) {}})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(bg)
		ran := make(chan struct{})
		go func() { defer close(ran); _ = ex.Run(runCtx) }()
		if _, err := executor.Await(bg, writer, Update("/cfg", map[string][]byte{"a": []byte("0")})); err != nil {
			t.Fatal(err)
		}
		apply := func(Snapshot) task.Task[task.Unit] {
			return func(sc *task.Scope, k task.Cont[task.Unit]) {
				sc.Defer(c.Sleep(time.Millisecond))
				task.Suspend(sc, k, func(task.Cont[task.Unit]) func() { return nil })
			}
		}
		r, err := executor.Await(bg, ex, Reload("/cfg", DirOptions{}, apply))
		if err != nil {
			t.Fatal(err)
		}
		var ws []*Watcher
		for _, kind := range watchKinds {
			wt, err := executor.Await(bg, ex, kind.mk(func(Snapshot) {}))
			if err != nil {
				t.Fatal(err)
			}
			ws = append(ws, wt)
		}
		rd, err := mustClient(t, ex, "/cfg").WatchDir(bg, DirOptions{})
		if err != nil {
			t.Fatal(err)
		}
		next := make(chan error, 1)
		go func() {
			for {
				if _, err := rd.Next(bg); err != nil {
					next <- err
					return
				}
			}
		}()
		for v := range i % 5 {
			if _, err := executor.Await(bg, writer, Update("/cfg", map[string][]byte{"a": fmt.Appendf(nil, "%d", v+1)})); err != nil {
				t.Fatal(err)
			}
		}
		stop()
		<-ran
		if !closedNow(r.Done()) || !errors.Is(r.Err(), task.ErrClosed) || r.Active() != 0 {
			t.Errorf("%d: once Run returned, the Reloader: Done %v, Err %v, active %d", i, closedNow(r.Done()), r.Err(), r.Active())
		}
		for j, wt := range ws {
			if !closedNow(wt.Done()) || !errors.Is(wt.Err(), task.ErrClosed) {
				t.Errorf("%d: once Run returned, the %s watcher: Done %v, Err %v", i, watchKinds[j].name, closedNow(wt.Done()), wt.Err())
			}
		}
		if err := <-next; !errors.Is(err, task.ErrClosed) {
			t.Errorf("%d: the Reader's Next ended with %v, want task.ErrClosed", i, err)
		}
		stopAll()
		<-wrote
		srv.Close()
	}
}

// UpdateMarked stopped half-way by the executor's close, its entry a
// written and its requests on b held back: the task fails with
// task.ErrClosed and the marker stands, as after a crash (the package
// doc: "a crashed writer must not expose a half-written
// configuration"), so a reader that honours it delivers nothing of the
// half-applied update; the same task value run again on another
// executor (a process that kept it) resumes with its token and completes
// the update. Client.UpdateMarked, whose doc said that an update once
// started "is not abandoned half-way, with the marker standing", returns
// task.ErrClosed with the marker standing: the close stops it where it
// is, as a crash does (its doc says so now).
func TestMarkedUpdateStoppedByTheExecutorsClose(t *testing.T) {
	for _, face := range []string{"task", "Client"} {
		t.Run(face, func(t *testing.T) {
			w, h := heldWorld(t)
			var got []Snapshot
			run(t, w, 1, WatchDir("/cfg", DirOptions{Marker: true}, func(s Snapshot) { got = append(got, s) }))
			values := map[string][]byte{"a": []byte("1"), "b": []byte("1")}
			up := UpdateMarked("/cfg", values)
			h.on = true
			var o *sim.Outcome[task.Unit]
			var callErr error
			called := false
			if face == "task" {
				o = sim.Submit(w, 0, up)
			} else {
				cl := mustClient(t, w.Execs[0], "/cfg")
				w.Go(0, func(a *sim.Actor) {
					callErr = cl.UpdateMarked(a.Context(), values)
					called = true
				})
			}
			if !w.Settle(func() bool { return h.reqs > 0 }) {
				t.Fatal("the update never reached b")
			}
			w.Execs[0].Shutdown()
			w.Settle(func() bool { return called || o != nil && o.Done })
			err := callErr
			if o != nil {
				err = o.Err
			}
			if !errors.Is(err, task.ErrClosed) {
				t.Fatalf("the update stopped by the executor's close returned %v, want task.ErrClosed", err)
			}
			state := func() string {
				var s []string
				for _, n := range []string{"a", "b", MarkerName} {
					d, _, ok := w.Server.NodeData("/cfg/" + n)
					if !ok {
						d = []byte("-")
					}
					s = append(s, n+"="+string(d))
				}
				return strings.Join(s, " ")
			}
			if st := state(); !strings.HasPrefix(st, "a=1 b=0 invalid=update-") {
				t.Fatalf("after the close the server holds %s, want a written, b not, the marker standing", st)
			}
			for _, s := range got {
				if string(s.Values["a"]) != string(s.Values["b"]) {
					t.Fatalf("a half-applied update delivered: %v", s.Values)
				}
			}
			if face == "task" {
				run(t, w, 1, up) // the same task value, on another executor
				w.Settle(func() bool { return string(got[len(got)-1].Values["b"]) == "1" })
				if st := state(); st != "a=1 b=1 invalid=-" || string(got[len(got)-1].Values["a"]) != "1" {
					t.Fatalf("the same task run again on another executor left %s, delivered %v", st, got[len(got)-1].Values)
				}
			}
		})
	}
}

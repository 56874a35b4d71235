package config_test

// Promises of the package's docs that an adversarial review found broken:
// each test's comment gives the promise and the schedule that broke it
// (the first four tests fail on the code before the fix); the last two
// held, and check what no other test does.

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/config"
	"github.com/zkflow/zkflow/task"
)

// rvWorld is a world of n clients with /cfg holding v=1.
func rvWorld(t *testing.T, n int) *sim.World {
	t.Helper()
	w, err := sim.New(sim.Config{Seed: 3, Clients: n})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	if _, err := sim.Run(w, n-1, config.Update("/cfg", map[string][]byte{"v": []byte("1")})); err != nil {
		t.Fatal(err)
	}
	return w
}

func runTo[T any](t *testing.T, w *sim.World, i int, tk task.Task[T]) T {
	t.Helper()
	v, err := sim.Run(w, i, tk)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// settleFor drives w for at most d of its clock, in steps of 100ms,
// until done holds.
func settleFor(w *sim.World, d time.Duration, done func() bool) bool {
	for ; d > 0; d -= 100 * time.Millisecond {
		w.Drive()
		if done() {
			return true
		}
		w.Clock.Advance(100 * time.Millisecond)
	}
	w.Drive()
	return done()
}

// Reload's doc: a run's scope is canceled "with ... task.ErrSessionExpired
// when the session expires (a new run with the latest version starts on
// the next session)"; PROTOCOL.md: "A run ended by session expiry is
// started again with the latest configuration on the new session."
// A component that shuts down cleanly when its scope is canceled (its
// task returns nil, as a server loop told to stop does) is never started
// again after the expiry: the Reloader judges "ended by expiry" by the
// error the task returned, not by why its scope ended.
func TestReloadRunEndingCleanlyOnExpiryIsRestarted(t *testing.T) {
	w := rvWorld(t, 2)
	var log []string
	apply := func(s config.Snapshot) task.Task[task.Unit] {
		v := string(s.Values["v"])
		return func(sc *task.Scope, k task.Cont[task.Unit]) {
			log = append(log, "start "+v)
			task.Suspend(sc, func(_ task.Unit, err error) {
				log = append(log, "end "+v+": "+err.Error())
				k(task.Unit{}, nil) // told to stop: stops cleanly
			}, func(task.Cont[task.Unit]) func() { return nil })
		}
	}
	r := runTo(t, w, 0, config.Reload("/cfg", config.DirOptions{}, apply))
	if !settleFor(w, time.Second, func() bool { return r.Active() == 1 }) {
		t.Fatalf("the first run never started: %q", log)
	}
	w.Server.Expire(w.Conns[0])
	if !settleFor(w, 30*time.Second, func() bool { return r.Runs() == 2 && r.Active() == 1 }) {
		t.Fatalf("30s after the session expired: Runs %d, Active %d, log %q; want the run started again on the new session",
			r.Runs(), r.Active(), log)
	}
	runTo(t, w, 0, r.Stop())
}

// The executor's doc: "a blocking call (Await, AwaitAcrossExpiry, Run,
// and every blocking recipe API) made while running a job of any
// executor gives ErrOnExecutor"; Reader's doc: "its methods are safe from
// any goroutine". Reader.Next called in a task body (on the executor
// goroutine) with nothing new to return blocks the executor (which is
// the goroutine that would deliver) until its ctx ends, instead of
// failing at once with executor.ErrOnExecutor; with a ctx that never
// ends it hangs the executor for good.
func TestReaderNextOnExecutorGoroutine(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	go func() { defer close(ran); _ = ex.Run(ctx) }()
	defer func() { stop(); <-ran }()
	cl, err := config.NewClient(ex, "/cfg")
	if err != nil {
		t.Fatal(err)
	}
	rd, err := cl.WatchDir(ctx, config.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rd.Next(ctx); err != nil { // the first delivery
		t.Fatal(err)
	}
	_, err = executor.Await(ctx, ex, task.Func(func(*task.Scope) (task.Unit, error) {
		// The bound only ends the hang the call would otherwise be.
		short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := rd.Next(short)
		return task.Unit{}, err
	}))
	if !errors.Is(err, executor.ErrOnExecutor) {
		t.Errorf("Reader.Next on the executor goroutine: %v, want executor.ErrOnExecutor at once (it waited on the executor it blocks)", err)
	}
	if err := rd.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// Client.UpdateMarked is "UpdateMarked ... and waits for the outcome";
// the package doc says the marker is left only when the writer's session
// expires midway or the writer crashes ("A writer that never comes back
// leaves readers on the last complete configuration, and other writers
// waiting, until an operator deletes the marker"). A caller whose ctx
// ends while its marked update is half written (the writer alive, its
// session live) gets ctx's error, and the flow is canceled with the
// marker standing: nothing will ever delete it, so every later Update
// (another client's, here, or this Client's own) waits for good and
// readers that honour the marker never deliver again.
func TestClientUpdateMarkedCtxEndFinishesTheUpdate(t *testing.T) {
	w, h, got := writersWorld(t)
	cl, err := config.NewClient(w.Execs[0], "/cfg")
	if err != nil {
		t.Fatal(err)
	}
	h.on = true // the marked update stops after its first entry
	var cancel context.CancelFunc
	var upErr error
	done := false
	a := w.Go(0, func(a *sim.Actor) {
		ctx, cc := a.WithCancel(a.Context())
		cancel = cc
		defer cc()
		upErr = cl.UpdateMarked(ctx, map[string][]byte{"a": []byte("1"), "b": []byte("1")})
		done = true
	})
	if !w.Settle(func() bool { return data(w, "/cfg/a") == "1" }) {
		t.Fatal("the first entry was never written")
	}
	w.Interrupt(a, cancel)
	if !w.Settle(func() bool { return done }) {
		t.Fatal("UpdateMarked never returned after its ctx ended")
	}
	if !errors.Is(upErr, context.Canceled) {
		t.Fatalf("UpdateMarked: %v, want ctx's error", upErr)
	}
	h.release()
	o := sim.Submit(w, 1, config.Update("/cfg", map[string][]byte{"a": []byte("2"), "b": []byte("2")}))
	if !settleFor(w, 2*time.Minute, func() bool { return o.Done }) {
		t.Errorf("a later Update still waits 2 minutes on: marker %s left by a live writer whose ctx ended; a=%s b=%s; reader at %s",
			data(w, "/cfg/"+config.MarkerName), data(w, "/cfg/a"), data(w, "/cfg/b"), whole(t, *got))
	}
}

// The package doc: "If the writer's session expires midway, the marker
// stays ... running the same task again (executor.AwaitAcrossExpiry)
// resumes and completes the update." Through the Client, which built a
// new task (a new token) on every call, there was no same task to run
// again: the Client's UpdateMarked failed with the expiry, and the same
// update asked again of it waited for the first call's marker for good.
// The Client resumes its own task across the expiry now: the one call
// completes the update and the marker goes.
func TestClientUpdateMarkedResumesAcrossExpiry(t *testing.T) {
	var ex *expireAt[*task.SetDataRequest]
	w := markerWorld(t, func(i int, conn *fakezk.Conn) task.Conn {
		if i == 0 && ex == nil {
			ex = &expireAt[*task.SetDataRequest]{Conn: conn, path: "/cfg/b"}
			return ex
		}
		return conn
	})
	ex.w = w
	cl, err := config.NewClient(w.Execs[0], "/cfg")
	if err != nil {
		t.Fatal(err)
	}
	values := map[string][]byte{"a": []byte("1"), "b": []byte("1")}
	var first error
	done := false
	w.Go(0, func(a *sim.Actor) {
		defer func() { done = true }()
		ctx, cancel := a.WithTimeout(a.Context(), time.Minute)
		defer cancel()
		first = cl.UpdateMarked(ctx, values)
	})
	if !settleFor(w, 2*time.Minute, func() bool { return done }) {
		t.Fatal("the actor never ended")
	}
	if first != nil || data(w, "/cfg/a") != "1" || data(w, "/cfg/b") != "1" || data(w, "/cfg/"+config.MarkerName) != "<none>" {
		t.Fatalf("UpdateMarked across an expiry: %v; marker %s, a=%s b=%s", first,
			data(w, "/cfg/"+config.MarkerName), data(w, "/cfg/a"), data(w, "/cfg/b"))
	}
}

// Holds (no existing test checks it at this level): a node whose data
// version runs past int32's maximum (SetCounters) is followed on: every
// set after the wrap is delivered, in order, by Watch and by Reload.
func TestVersionWrapDelivered(t *testing.T) {
	w := rvWorld(t, 2)
	if err := w.SetCounters("/cfg/v", math.MaxInt32-1, 0); err != nil {
		t.Fatal(err)
	}
	var got []string
	runTo(t, w, 0, config.Watch("/cfg/v", func(s config.Snapshot) { got = append(got, string(s.Data)) }))
	var runs []string
	r := runTo(t, w, 0, config.Reload("/cfg", config.DirOptions{}, func(s config.Snapshot) task.Task[task.Unit] {
		runs = append(runs, string(s.Values["v"]))
		return task.Done
	}))
	for _, v := range []string{"2", "3", "4"} {
		runTo(t, w, 1, task.Set("/cfg/v", []byte(v), task.AnyVersion))
		settleFor(w, 5*time.Second, func() bool { return got[len(got)-1] == v && runs[len(runs)-1] == v })
	}
	if st, _ := w.Server.NodeStat("/cfg/v"); st.Version >= 0 {
		t.Fatalf("the version did not wrap: %d", st.Version)
	}
	if strings.Join(got, ",") != "1,2,3,4" || strings.Join(runs, ",") != "1,2,3,4" {
		t.Errorf("across the version wrap: Watch delivered %v, Reload ran %v; want 1,2,3,4", got, runs)
	}
	runTo(t, w, 0, r.Stop())
}

// Holds (no existing test checks it): an operator deletes the watched
// node and creates it again with the same data (version back to 0) while
// the reader is cut off (same session, then a new one): the reader ends
// on the new incarnation (its czxid), for Watch and WatchDir alike.
func TestRecreatedWhileCutOffDelivered(t *testing.T) {
	for _, expire := range []bool{false, true} {
		w := rvWorld(t, 2)
		if err := w.SetCounters("/cfg/v", 7, 0); err != nil {
			t.Fatal(err)
		}
		var node, dir []config.Snapshot
		runTo(t, w, 0, config.Watch("/cfg/v", func(s config.Snapshot) { node = append(node, s) }))
		runTo(t, w, 0, config.WatchDir("/cfg", config.DirOptions{}, func(s config.Snapshot) { dir = append(dir, s) }))
		d := 2 * time.Second
		if expire {
			d = 3 * w.Timeout()
		}
		w.Server.Partition(w.Conns[0], d, false)
		if err := w.Server.AdminDelete("/cfg/v"); err != nil {
			t.Fatal(err)
		}
		if err := w.Server.AdminCreate("/cfg/v", []byte("1"), 0); err != nil {
			t.Fatal(err)
		}
		st, _ := w.Server.NodeStat("/cfg/v")
		ok := settleFor(w, 3*d, func() bool {
			return node[len(node)-1].Stats[""].Czxid == st.Czxid && dir[len(dir)-1].Stats["v"].Czxid == st.Czxid
		})
		if !ok {
			t.Errorf("expire %v: the re-created node (czxid %d) never delivered: Watch ends at czxid %d, WatchDir at %d",
				expire, st.Czxid, node[len(node)-1].Stats[""].Czxid, dir[len(dir)-1].Stats["v"].Czxid)
		}
	}
}

// Reload's doc: a run ended by the session's expiry starts again with the
// latest configuration on the next session. A run whose cleanup (Scope.Defer)
// outlasts the watcher's first read on the new session was started again
// only at the next version: the component stayed idle, with a configuration
// in hand, until somebody changed it.
func TestReloadRunWithASlowCleanupIsRestartedAfterExpiry(t *testing.T) {
	w := rvWorld(t, 2)
	var log []string
	apply := func(s config.Snapshot) task.Task[task.Unit] {
		v := string(s.Values["v"])
		return func(sc *task.Scope, k task.Cont[task.Unit]) {
			log = append(log, "start "+v)
			// Undoing this run's work takes 20s of the clock: far longer
			// than the watcher needs to read the configuration again.
			sc.Defer(combinators.Sleep(20 * time.Second))
			task.Suspend(sc, func(_ task.Unit, err error) {
				log = append(log, "end "+v+": "+err.Error())
				k(task.Unit{}, err)
			}, func(task.Cont[task.Unit]) func() { return nil })
		}
	}
	r := runTo(t, w, 0, config.Reload("/cfg", config.DirOptions{}, apply))
	if !settleFor(w, time.Second, func() bool { return r.Active() == 1 }) {
		t.Fatalf("the first run never started: %q", log)
	}
	w.Server.Expire(w.Conns[0])
	if !settleFor(w, 60*time.Second, func() bool { return r.Runs() == 2 && r.Active() == 1 }) {
		t.Fatalf("60s after the session expired: Runs %d, Active %d, log %q; want the run started again on the new session once its cleanup ended",
			r.Runs(), r.Active(), log)
	}
	runTo(t, w, 0, r.Stop())
}

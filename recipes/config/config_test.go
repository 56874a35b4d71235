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

func newWorld(t *testing.T, clients int) *sim.World {
	t.Helper()
	w, err := sim.New(sim.Config{Seed: 3, Clients: clients})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

func run[T any](t *testing.T, w *sim.World, i int, tk task.Task[T]) T {
	t.Helper()
	v, err := sim.Run(w, i, tk)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mkdir(t *testing.T, w *sim.World, paths ...string) {
	t.Helper()
	for _, p := range paths {
		run(t, w, 0, task.Create(p, nil, task.Persistent))
	}
}

// An update creates a missing root, with its ancestors, as the other
// recipes create their directories: both kinds of update, and the values
// are there afterwards.
func TestUpdateCreatesRoot(t *testing.T) {
	w := newWorld(t, 1)
	for _, tc := range []struct {
		root string
		t    task.Task[task.Unit]
	}{
		{"/missing/a", Update("/missing/a", map[string][]byte{"k": []byte("1")})},
		{"/missing/b", UpdateMarked("/missing/b", map[string][]byte{"k": []byte("2")})},
	} {
		if _, err := sim.Run(w, 0, tc.t); err != nil {
			t.Fatalf("update of %s with no root: %v", tc.root, err)
		}
		d, err := sim.Run(w, 0, task.Get(tc.root+"/k"))
		if err != nil || len(d.Data) != 1 {
			t.Fatalf("%s/k after the update: %q, %v", tc.root, d.Data, err)
		}
		if s, _ := sim.Run(w, 0, task.Exists(tc.root+"/"+MarkerName)); s != nil {
			t.Fatalf("%s: the marker was left behind", tc.root)
		}
	}
}

// Bad input gets typed errors before anything is sent.
func TestBadInput(t *testing.T) {
	w := newWorld(t, 1)
	cases := []struct {
		name string
		t    task.Task[task.Unit]
		want error
	}{
		{"update bad root", Update("nope", map[string][]byte{"a": nil}), task.ErrInvalidPath},
		{"update no values", Update("/r", nil), task.ErrInvalidArgument},
		{"update slash", Update("/r", map[string][]byte{"a/b": nil}), task.ErrInvalidPath},
		{"update marker name", Update("/r", map[string][]byte{MarkerName: nil}), task.ErrInvalidPath},
		{"update empty name", UpdateMarked("/r", map[string][]byte{"": nil}), task.ErrInvalidPath},
	}
	for _, tc := range cases {
		if _, err := sim.Run(w, 0, tc.t); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := sim.Run(w, 0, Watch("/x", nil)); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Watch with nil handler: %v", err)
	}
	if _, err := sim.Run(w, 0, Watch("x", func(Snapshot) {})); !errors.Is(err, task.ErrInvalidPath) {
		t.Errorf("Watch of a bad path: %v", err)
	}
	if _, err := sim.Run(w, 0, Reload("/x", DirOptions{}, nil)); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Reload with nil apply: %v", err)
	}
	if _, err := NewClient(nil, "/x"); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("NewClient with nil executor: %v", err)
	}
	if _, err := NewClient(w.Execs[0], "/x", nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("NewClient with a nil option: %v", err)
	}
	for _, root := range []string{"", "x", "/x/"} {
		if _, err := NewClient(w.Execs[0], root); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("NewClient(%q): %v, want ErrInvalidPath", root, err)
		}
	}
	if len(w.Server.Paths()) > 1 && strings.Contains(strings.Join(w.Server.Paths(), ","), "/r") {
		t.Errorf("bad input wrote to the server: %v", w.Server.Paths())
	}
}

// A change made while the watcher's client is cut off is delivered once
// it is back: after a partition shorter than the session timeout (same
// session, the watch fires on reconnect) and after expiry (new session,
// the node is read again).
func TestChangeDuringDisconnection(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cutOff func(w *sim.World)
		away   bool // the client is away while the writes are made
	}{
		{"partition", func(w *sim.World) { w.Server.Partition(w.Conns[0], 2*time.Second, false) }, true},
		{"long partition (expiry)", func(w *sim.World) { w.Server.Partition(w.Conns[0], 3*w.Timeout(), false) }, true},
		{"drop (reconnects at once)", func(w *sim.World) { w.Server.Drop(w.Conns[0], false) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 2)
			run(t, w, 1, task.Create("/flag", []byte("v1"), task.Persistent))
			var got []string
			run(t, w, 0, Watch("/flag", func(s Snapshot) { got = append(got, string(s.Data)) }))
			tc.cutOff(w)
			run(t, w, 1, task.Set("/flag", []byte("v2"), -1))
			run(t, w, 1, task.Set("/flag", []byte("v3"), -1))
			if tc.away && len(got) != 1 {
				t.Fatalf("delivered while cut off: %v", got)
			}
			w.Settle(func() bool { return got[len(got)-1] == "v3" })
			if got[len(got)-1] != "v3" || got[0] != "v1" {
				t.Fatalf("delivered %v, want v1 first and v3 last", got)
			}
		})
	}
}

// Update writes every entry in one multi; a WatchDir reader sees the old
// or the new configuration, never a mix; entries are created as needed.
func TestUpdate(t *testing.T) {
	w := newWorld(t, 2)
	mkdir(t, w, "/cfg")
	run(t, w, 1, Update("/cfg", map[string][]byte{"a": []byte("1"), "b": []byte("1")}))
	var got []string
	run(t, w, 0, WatchDir("/cfg", DirOptions{}, func(s Snapshot) {
		got = append(got, string(s.Values["a"])+string(s.Values["b"])+string(s.Values["c"]))
	}))
	run(t, w, 1, Update("/cfg", map[string][]byte{"a": []byte("2"), "b": []byte("2"), "c": []byte("2")}))
	w.Settle(func() bool { return got[len(got)-1] == "222" })
	if strings.Join(got, ",") != "11,222" {
		t.Fatalf("delivered %v, want [11 222]", got)
	}
}

// UpdateMarked writes one entry at a time under the marker: a reader that
// honours the marker sees only complete configurations; a lost reply to
// the marker's create is recognised by its token; an Update waits for the
// marker to go.
func TestUpdateMarked(t *testing.T) {
	w := newWorld(t, 3)
	mkdir(t, w, "/cfg")
	run(t, w, 1, Update("/cfg", map[string][]byte{"a": []byte("1"), "b": []byte("1")}))
	var got []string
	run(t, w, 0, WatchDir("/cfg", DirOptions{Marker: true}, func(s Snapshot) {
		got = append(got, string(s.Values["a"])+string(s.Values["b"]))
	}))
	// Client 1 holds the marker while it writes; cut its connection just
	// after the create of the marker is sent (applied, reply lost).
	mark := sim.Submit(w, 1, UpdateMarked("/cfg", map[string][]byte{"a": []byte("2"), "b": []byte("2")}))
	w.Execs[1].RunUntilIdle()
	w.Server.Drop(w.Conns[1], true)
	upd := sim.Submit(w, 2, Update("/cfg", map[string][]byte{"a": []byte("3"), "b": []byte("3")}))
	w.Settle(func() bool { return mark.Done && upd.Done })
	if mark.Err != nil || upd.Err != nil {
		t.Fatalf("UpdateMarked: %v; Update: %v", mark.Err, upd.Err)
	}
	if _, ok := w.Server.NodeStat("/cfg/" + MarkerName); ok {
		t.Fatal("marker left behind")
	}
	w.Settle(func() bool { return got[len(got)-1] == "33" || got[len(got)-1] == "22" })
	for _, g := range got {
		if g[0] != g[1] {
			t.Fatalf("half-applied configuration delivered: %v", got)
		}
	}
	t.Logf("delivered %v", got)
}

// The Reloader runs apply once per version, canceling the previous run
// (with ErrReloaded) before the next starts, and restarts the run on a new
// session after an expiry.
func TestReloader(t *testing.T) {
	w := newWorld(t, 2)
	mkdir(t, w, "/cfg")
	run(t, w, 1, Update("/cfg", map[string][]byte{"v": []byte("1")}))
	var log []string
	apply := func(s Snapshot) task.Task[task.Unit] {
		return func(sc *task.Scope, k task.Cont[task.Unit]) {
			log = append(log, "start "+string(s.Values["v"]))
			task.Suspend(sc, func(_ task.Unit, err error) {
				log = append(log, "end "+string(s.Values["v"])+": "+err.Error())
				k(task.Unit{}, err)
			}, func(task.Cont[task.Unit]) func() { return nil })
		}
	}
	r := run(t, w, 0, Reload("/cfg", DirOptions{}, apply))
	run(t, w, 1, Update("/cfg", map[string][]byte{"v": []byte("2")}))
	if !w.Settle(func() bool { return r.Runs() == 2 }) {
		t.Fatalf("Runs = %d after the second version, want 2", r.Runs())
	}
	w.Server.Expire(w.Conns[0])
	if !w.Settle(func() bool { return r.Runs() == 3 }) {
		t.Fatalf("Runs = %d after the expiry, want 3", r.Runs())
	}
	run(t, w, 0, r.Stop())
	want := []string{"start 1", "end 1: " + ErrReloaded.Error(), "start 2", "end 2: " + task.ErrSessionExpired.Error(),
		"start 2", "end 2: " + ErrStopped.Error()}
	if strings.Join(log, "|") != strings.Join(want, "|") {
		t.Fatalf("runs:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
}

// A run that ends by itself leaves the component idle until the next
// version: an expiry, after which the same configuration is read again,
// starts no run; a run that fails is reported to the executor's error
// handler, one that succeeds is not.
func TestReloaderIdleAfterRunEnds(t *testing.T) {
	w := newWorld(t, 2)
	mkdir(t, w, "/cfg")
	run(t, w, 1, Update("/cfg", map[string][]byte{"v": []byte("1")}))
	boom := errors.New("boom")
	var started []string
	apply := func(s Snapshot) task.Task[task.Unit] {
		v := string(s.Values["v"])
		started = append(started, v)
		if v == "2" {
			return task.Fail[task.Unit](boom)
		}
		return task.Done
	}
	r := run(t, w, 0, Reload("/cfg", DirOptions{}, apply))
	w.Settle(func() bool { return r.Active() == 0 })
	w.Server.Expire(w.Conns[0])
	w.Settle(func() bool { return false })
	if r.Runs() != 1 || len(w.Errs) != 0 {
		t.Fatalf("after an expiry of an idle component: Runs = %d (started %v), errors %v; want one run, no error", r.Runs(), started, w.Errs)
	}
	run(t, w, 1, Update("/cfg", map[string][]byte{"v": []byte("2")}))
	if !w.Settle(func() bool { return len(w.Errs) > 0 }) || !errors.Is(w.Errs[0], boom) {
		t.Fatalf("a failed run: errors %v, want %v", w.Errs, boom)
	}
	run(t, w, 0, r.Stop())
	if r.Runs() != 2 || len(w.Errs) != 1 {
		t.Fatalf("Runs = %d (started %v), errors %v; want 2 runs and one error", r.Runs(), started, w.Errs)
	}
}

// A marker held by someone else (here an empty one, as a tool that
// writes one node at a time may leave) holds back both writers until it
// goes, and a reader that honours it delivers nothing meanwhile, not even
// the tool's writes; once it goes, the writer's values are written.
func TestMarkerHeldByAnother(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(map[string][]byte) task.Task[task.Unit]
	}{
		{"Update", func(v map[string][]byte) task.Task[task.Unit] { return Update("/cfg", v) }},
		{"UpdateMarked", func(v map[string][]byte) task.Task[task.Unit] { return UpdateMarked("/cfg", v) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 3)
			mkdir(t, w, "/cfg")
			run(t, w, 1, Update("/cfg", map[string][]byte{"a": []byte("1")}))
			var got []string
			run(t, w, 0, WatchDir("/cfg", DirOptions{Marker: true}, func(s Snapshot) {
				got = append(got, string(s.Values["a"]))
			}))
			marker := "/cfg/" + MarkerName
			if err := w.Server.AdminCreate(marker, nil, 0); err != nil {
				t.Fatal(err)
			}
			run(t, w, 2, task.Set("/cfg/a", []byte("2"), task.AnyVersion)) // the tool's write
			o := sim.Submit(w, 1, tc.write(map[string][]byte{"a": []byte("3")}))
			w.Settle(func() bool { return o.Done })
			if o.Done {
				t.Fatalf("the writer went ahead under another's marker: %v", o.Err)
			}
			if strings.Join(got, ",") != "1" {
				t.Fatalf("delivered %v under the marker, want only [1]", got)
			}
			if err := w.Server.AdminDelete(marker); err != nil {
				t.Fatal(err)
			}
			if !w.Settle(func() bool { return o.Done }) || o.Err != nil {
				t.Fatalf("after the marker went: done %v, %v", o.Done, o.Err)
			}
			if d, _, ok := w.Server.NodeData("/cfg/a"); !ok || string(d) != "3" {
				t.Fatalf("/cfg/a = %q, want the writer's 3", d)
			}
			if w.Settle(func() bool { return got[len(got)-1] == "3" }); got[len(got)-1] != "3" {
				t.Fatalf("delivered %v, want 3 last", got)
			}
		})
	}
}

// A directory's snapshot says whether it has any child: not while it is
// empty, yes once an entry is written, not again once the last goes.
func TestWatchDirExists(t *testing.T) {
	w := newWorld(t, 2)
	mkdir(t, w, "/cfg")
	var got []bool
	run(t, w, 0, WatchDir("/cfg", DirOptions{}, func(s Snapshot) { got = append(got, s.Exists) }))
	run(t, w, 1, Update("/cfg", map[string][]byte{"a": []byte("1")}))
	w.Settle(func() bool { return len(got) == 2 })
	run(t, w, 1, task.Delete("/cfg/a", task.AnyVersion))
	w.Settle(func() bool { return len(got) == 3 })
	if fmt.Sprint(got) != "[false true false]" {
		t.Fatalf("Exists delivered %v, want [false true false]", got)
	}
}

// The blocking Reader on a running executor (fakezk in real time).
func TestReader(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	var done []chan struct{}
	start := func(seed uint64) *executor.Executor {
		ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		ch := make(chan struct{})
		go func() { defer close(ch); _ = ex.Run(ctx) }()
		done = append(done, ch)
		return ex
	}
	defer func() {
		stop()
		for _, ch := range done {
			<-ch
		}
	}()
	reader, writer := start(1), start(2)
	if _, err := executor.Await(ctx, writer, c.Seq(task.Create("/cfg", nil, task.Persistent),
		Update("/cfg", map[string][]byte{"port": []byte("80")}))); err != nil {
		t.Fatal(err)
	}
	cl, err := NewClient(reader, "/cfg")
	if err != nil {
		t.Fatal(err)
	}
	if cl.Root() != "/cfg" {
		t.Errorf("Root() = %q", cl.Root())
	}
	rd, err := cl.WatchDir(ctx, DirOptions{Marker: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rd.Next(ctx)
	if err != nil || string(s.Values["port"]) != "80" {
		t.Fatalf("first Next: %v, %v", s.Values, err)
	}
	if _, err := executor.AwaitAcrossExpiry(ctx, writer, UpdateMarked("/cfg", map[string][]byte{"port": []byte("81")})); err != nil {
		t.Fatal(err)
	}
	s, err = rd.Next(ctx)
	if err != nil || string(s.Values["port"]) != "81" {
		t.Fatalf("second Next: %v, %v", s.Values, err)
	}
	// The writer's blocking face: UpdateMarked and Update reach the reader.
	wc, err := NewClient(writer, "/cfg")
	if err != nil {
		t.Fatal(err)
	}
	for i, update := range []func(context.Context, map[string][]byte) error{wc.UpdateMarked, wc.Update} {
		port := fmt.Sprint(82 + i)
		if err := update(ctx, map[string][]byte{"port": []byte(port)}); err != nil {
			t.Fatal(err)
		}
		s, err = rd.Next(ctx)
		if err != nil || string(s.Values["port"]) != port {
			t.Fatalf("Next after the blocking update to %s: %v, %v", port, s.Values, err)
		}
	}
	// A slow reader: three updates delivered with no Next between them.
	// Next returns the latest (versions coalesce), not an older one, and
	// then has nothing older queued.
	for _, port := range []string{"90", "91", "92"} {
		if err := wc.Update(ctx, map[string][]byte{"port": []byte(port)}); err != nil {
			t.Fatal(err)
		}
	}
	for { // the delivery, on the executor's goroutine
		if l, ok := rd.Latest(); ok && string(l.Values["port"]) == "92" {
			break
		}
		select {
		case <-ctx.Done():
			l, _ := rd.Latest()
			t.Fatalf("the watcher delivers %v", l.Values)
		case <-time.After(time.Millisecond):
		}
	}
	s, err = rd.Next(ctx)
	if err != nil || string(s.Values["port"]) != "92" {
		t.Fatalf("a slow reader's Next after three updates: %v, %v, want port 92", s.Values, err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	if s, err := rd.Next(short); err == nil && string(s.Values["port"]) != "92" {
		t.Fatalf("Next after the latest returned an older configuration: %v", s.Values)
	}
	cancel()
	// Watch follows one node: the root of its Client.
	nd, err := mustClient(t, reader, "/cfg/port").Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := nd.Next(ctx); err != nil || !s.Exists || string(s.Data) != "92" {
		t.Fatalf("Watch's first Next: %+v, %v", s, err)
	}
	if err := nd.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rd.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rd.Next(ctx); !errors.Is(err, ErrStopped) {
		t.Fatalf("Next after Stop: %v", err)
	}
}

// With Subtree, entries at every level are delivered, keyed by their path
// under the root; the same with Recursive (one recursive watch), which
// needs Subtree.
func TestWatchSubtree(t *testing.T) {
	for _, recursive := range []bool{false, true} {
		t.Run(fmt.Sprintf("recursive=%v", recursive), func(t *testing.T) {
			w := newWorld(t, 2)
			mkdir(t, w, "/app", "/app/db")
			run(t, w, 1, Update("/app/db", map[string][]byte{"host": []byte("h1"), "port": []byte("1")}))
			var got []string
			run(t, w, 0, WatchDir("/app", DirOptions{Subtree: true, Marker: true, Recursive: recursive}, func(s Snapshot) {
				got = append(got, show(s.Values))
			}))
			run(t, w, 1, UpdateMarked("/app/db", map[string][]byte{"host": []byte("h2"), "port": []byte("2")}))
			w.Settle(func() bool { return strings.Contains(got[len(got)-1], "db/host=h2") })
			want := []string{"{ db= db/host=h1 db/port=1 }", "{ db= db/host=h2 db/port=2 }"}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("delivered %v, want %v", got, want)
			}
		})
	}
	if _, err := sim.Run(newWorld(t, 1), 0, WatchDir("/app", DirOptions{Recursive: true}, func(Snapshot) {})); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Recursive without Subtree: %v", err)
	}
}

// WriteToHandlerLatency rejects bad input before it sends anything.
func TestWriteToHandlerLatencyBadInput(t *testing.T) {
	if _, err := WriteToHandlerLatency(context.Background(), nil, nil, "/x", 1); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("nil executors: %v", err)
	}
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock()})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Shutdown()
	if _, err := WriteToHandlerLatency(context.Background(), ex, ex, "/x", -1); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("negative count: %v", err)
	}
}

// On the fake (whose clock does not move by itself, so the latencies are
// zero): n latencies, and the node is removed afterwards.
func TestWriteToHandlerLatency(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	var done []chan struct{}
	start := func(seed uint64) *executor.Executor {
		ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		ch := make(chan struct{})
		go func() { defer close(ch); _ = ex.Run(ctx) }()
		done = append(done, ch)
		return ex
	}
	defer func() {
		stop()
		for _, ch := range done {
			<-ch
		}
	}()
	reader, writer := start(1), start(2)
	lat, err := WriteToHandlerLatency(ctx, reader, writer, "/lat", 20)
	if err != nil {
		t.Fatal(err)
	}
	if len(lat) != 20 {
		t.Fatalf("%d latencies, want 20", len(lat))
	}
	for i, d := range lat {
		if d < 0 {
			t.Fatalf("latency %d: %v", i, d)
		}
	}
	if st, err := executor.Await(ctx, writer, task.Exists("/lat")); err != nil || st != nil {
		t.Fatalf("/lat left behind: %v, %v", st, err)
	}
}

func mustClient(t *testing.T, ex *executor.Executor, root string) *Client {
	t.Helper()
	c, err := NewClient(ex, root)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

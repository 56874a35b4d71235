package cache

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// current is the running test, for must (tests here do not run in
// parallel).
var current *testing.T

func newWorld(t *testing.T, clients int) *sim.World {
	t.Helper()
	current = t
	w, err := sim.New(sim.Config{Seed: 7, Clients: clients})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

// must returns v, or fails the current test (set by newWorld) with err.
func must[T any](v T, err error) T {
	current.Helper()
	if err != nil {
		current.Fatal(err)
	}
	return v
}

func names(ns []Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name())
	}
	return out
}

// Bad input gets typed errors, never a panic.
func TestBadInput(t *testing.T) {
	for _, p := range []string{"", "rel", "/a/", "/a//b"} {
		if _, err := NewChildren(p); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("NewChildren(%q): %v, want ErrInvalidPath", p, err)
		}
		if _, err := NewNode(p); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("NewNode(%q): %v, want ErrInvalidPath", p, err)
		}
	}
	if _, err := NewChildrenClient(nil, "/x"); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("NewChildrenClient(nil executor): %v", err)
	}
	if _, err := NewNodeClient(nil, "/x"); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("NewNodeClient(nil executor): %v", err)
	}
	if _, err := NewTreeClient(nil, "/x"); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("NewTreeClient(nil executor): %v", err)
	}
	for name, err := range map[string]error{
		"NewChildren(WithRecursive)": second(NewChildren("/x", WithRecursive())),
		"NewNode(WithRecursive)":     second(NewNode("/x", WithRecursive())),
		"NewTree(nil option)":        second(NewTree("/x", WithData(), nil)),
		"NewChildren(nil option)":    second(NewChildren("/x", nil)),
	} {
		if !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if _, err := NewTree("x"); !errors.Is(err, task.ErrInvalidPath) {
		t.Errorf("NewTree(x): %v", err)
	}
	w := newWorld(t, 1)
	cc := must(NewChildren("/x"))
	if _, err := sim.Run(w, 0, cc.Next()); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Next before Start: %v", err)
	}
	must(sim.Run(w, 0, cc.Start()))
	if _, err := sim.Run(w, 0, cc.Start()); !errors.Is(err, ErrStarted) {
		t.Errorf("second Start: %v, want ErrStarted", err)
	}
	must(sim.Run(w, 0, cc.Stop()))
	if _, err := sim.Run(w, 0, cc.Next()); !errors.Is(err, ErrStopped) {
		t.Errorf("Next after Stop: %v, want ErrStopped", err)
	}
}

// Next tells what was added and removed since the last read; a missing
// directory has no children, and its creation is followed.
func TestChildrenAddedRemoved(t *testing.T) {
	w := newWorld(t, 2)
	var events []string
	cc := must(NewChildren("/d", WithOnEvent(func(ev Event) { events = append(events, ev.String()) })))
	must(sim.Run(w, 0, cc.Start()))
	if got := cc.Current(); len(got) != 0 {
		t.Fatalf("missing directory: cached %v", names(got))
	}
	next := sim.Submit(w, 0, cc.Next())
	must(sim.Run(w, 1, c.Seq(task.Create("/d", nil, task.Persistent),
		c.Seq(task.Create("/d/a", nil, task.Persistent), task.Create("/d/b", nil, task.Persistent)))))
	w.Settle(func() bool { return next.Done && len(cc.Current()) == 2 })
	ch := next.V
	if next.Err != nil || len(ch.Added) == 0 {
		t.Fatalf("first Next: %+v, %v", ch, next.Err)
	}
	added := names(ch.Added)
	if len(added) < 2 { // the first snapshot may come before b is made
		added = append(added, names(must(sim.Run(w, 0, cc.Next())).Added)...)
	}
	if !slices.Equal(added, []string{"a", "b"}) {
		t.Fatalf("Added over the first Nexts: %v, want [a b]", added)
	}
	must(sim.Run(w, 1, c.Seq(task.Delete("/d/a", -1), task.Create("/d/c", []byte("x"), task.Persistent))))
	ch = must(sim.Run(w, 0, cc.Next()))
	if !slices.Equal(names(ch.Added), []string{"c"}) || !slices.Equal(names(ch.Removed), []string{"a"}) ||
		!slices.Equal(names(ch.Nodes), []string{"b", "c"}) {
		t.Fatalf("Next: added %v removed %v nodes %v; want added [c], removed [a], nodes [b c]",
			names(ch.Added), names(ch.Removed), names(ch.Nodes))
	}
	if ch.Added[0].Data != nil {
		t.Errorf("data kept without Options.Data: %q", ch.Added[0].Data)
	}
	want := []string{"added /d/a", "added /d/b", "removed /d/a", "added /d/c"}
	if !slices.Equal(events, want) {
		t.Errorf("OnEvent: %v, want %v", events, want)
	}
}

// A node deleted and created again while the cache's client was cut off,
// with the same data and version, is reported as re-created, not as
// unchanged or changed.
func TestRecreatedWhileDisconnected(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cutOff func(w *sim.World)
	}{
		{"partition", func(w *sim.World) { w.Server.Partition(w.Conns[0], time.Second, false) }},
		{"expiry", func(w *sim.World) { w.Server.Expire(w.Conns[0]) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 2)
			must(sim.Run(w, 1, task.Create("/n", []byte("same"), task.Persistent)))
			var events []Event
			nc := must(NewNode("/n", WithOnEvent(func(ev Event) { events = append(events, ev) })))
			must(sim.Run(w, 0, nc.Start()))
			first := must(sim.Run(w, 0, nc.Next()))
			if len(first.Added) != 1 {
				t.Fatalf("first Next: %+v", first)
			}
			old := first.Added[0]
			tc.cutOff(w)
			must(sim.Run(w, 1, c.Seq(task.Delete("/n", -1), task.Create("/n", []byte("same"), task.Persistent))))
			w.Settle(func() bool { n, ok := nc.Current(); return ok && n.Stat.Czxid != old.Stat.Czxid })
			ch := must(sim.Run(w, 0, nc.Next()))
			if len(ch.Recreated) != 1 || len(ch.Changed)+len(ch.Added)+len(ch.Removed) != 0 {
				t.Fatalf("Next after delete and re-create: %+v, want one Recreated", ch)
			}
			n := ch.Recreated[0]
			if n.Stat.Version != old.Stat.Version || string(n.Data) != "same" || n.Stat.Czxid == old.Stat.Czxid {
				t.Fatalf("re-created node %+v, old %+v", n.Stat, old.Stat)
			}
			st, _ := w.Server.NodeStat("/n")
			if n.Stat != st {
				t.Fatalf("cached Stat %+v, server %+v", n.Stat, st)
			}
			last := events[len(events)-1]
			if last.Type != Recreated || last.Prev.Stat != old.Stat {
				t.Fatalf("last OnEvent %v (prev %+v)", last, last.Prev.Stat)
			}
		})
	}
}

// With Options.Data the children's data is kept and changes are reported.
func TestChildrenData(t *testing.T) {
	w := newWorld(t, 2)
	must(sim.Run(w, 1, c.Seq(task.Create("/d", nil, task.Persistent), task.Create("/d/a", []byte("1"), task.Persistent))))
	cc := must(NewChildren("/d", WithData()))
	must(sim.Run(w, 0, cc.Start()))
	must(sim.Run(w, 0, cc.Next()))
	must(sim.Run(w, 1, task.Set("/d/a", []byte("2"), -1)))
	ch := must(sim.Run(w, 0, cc.Next()))
	if len(ch.Changed) != 1 || string(ch.Changed[0].Data) != "2" {
		t.Fatalf("Next after set: %+v", ch)
	}
}

// The blocking API on a running executor (fakezk in real time).
func TestBlocking(t *testing.T) {
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
	wt, err := NewChildrenClient(reader, "/blocking", WithData())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Next(ctx); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Next before Start: %v, want ErrInvalidArgument", err)
	}
	if wt.Done() != nil || wt.Current() != nil || wt.Err() != nil {
		t.Errorf("before Start: Done %v, Current %v, Err %v; want nil", wt.Done(), wt.Current(), wt.Err())
	}
	if err := wt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := wt.Start(ctx); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("second Start: %v, want ErrInvalidArgument", err)
	}
	if _, err := executor.Await(ctx, writer, c.Seq(task.Create("/blocking", nil, task.Persistent),
		task.Create("/blocking/x", []byte("1"), task.Persistent))); err != nil {
		t.Fatal(err)
	}
	var added []string
	for len(added) == 0 {
		ch, err := wt.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		added = append(added, names(ch.Added)...)
	}
	if !slices.Equal(added, []string{"x"}) || !slices.Equal(names(wt.Current()), []string{"x"}) {
		t.Fatalf("added %v, current %v", added, names(wt.Current()))
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := wt.Next(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next with nothing new: %v, want deadline exceeded", err)
	}
	if err := wt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	<-wt.Done()
	if _, err := wt.Next(ctx); !errors.Is(err, ErrStopped) {
		t.Fatalf("Next after Close: %v", err)
	}
}

func paths(ns []Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Path)
	}
	return out
}

// A TreeCache follows every level: nodes created under new nodes are
// found, a removed node takes its subtree, a missing root is followed.
func TestTree(t *testing.T) {
	w := newWorld(t, 2)
	tc := must(NewTree("/t", WithData()))
	must(sim.Run(w, 0, tc.Start()))
	if got := tc.Current(); len(got) != 0 {
		t.Fatalf("missing root: cached %v", paths(got))
	}
	mk := func(p, data string) task.Task[task.Unit] {
		return c.Map(task.Create(p, []byte(data), task.Persistent), func(string) task.Unit { return task.Unit{} })
	}
	must(sim.Run(w, 1, c.Seq(mk("/t", ""), c.Seq(mk("/t/a", "1"), c.Seq(mk("/t/a/b", "2"), mk("/t/c", "3"))))))
	w.Settle(func() bool { return len(tc.Current()) == 4 })
	ch := must(sim.Run(w, 0, tc.Next()))
	if want := []string{"/t", "/t/a", "/t/a/b", "/t/c"}; !slices.Equal(paths(ch.Nodes), want) {
		t.Fatalf("tree %v, want %v", paths(ch.Nodes), want)
	}
	must(sim.Run(w, 1, c.Seq(task.Delete("/t/a/b", -1), c.Seq(task.Delete("/t/a", -1), mk("/t/c/d", "4")))))
	w.Settle(func() bool { return len(tc.Current()) == 3 })
	ch = must(sim.Run(w, 0, tc.Next()))
	if !slices.Equal(paths(ch.Removed), []string{"/t/a", "/t/a/b"}) || !slices.Equal(paths(ch.Added), []string{"/t/c/d"}) {
		t.Fatalf("removed %v added %v; want removed [/t/a /t/a/b], added [/t/c/d]", paths(ch.Removed), paths(ch.Added))
	}
	if d := ch.Added[0].Data; string(d) != "4" {
		t.Fatalf("data %q", d)
	}
}

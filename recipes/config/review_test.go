package config

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// Holds (no other test calls a Client after its executor stopped): a
// Reader's Next returns what was delivered, then the watcher's end,
// task.ErrClosed, at once, its Stop returns nil, Latest still answers;
// every other blocking method returns task.ErrClosed at once, none waits
// for ever, and with a ctx that has ended, its ctx's error.
func TestCallsAfterTheExecutorStopped(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = ex.Run(runCtx) }()
	defer func() { stop(); <-ran }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := mustClient(t, ex, "/review/stopped")
	if err := c.Update(ctx, map[string][]byte{"a": []byte("1")}); err != nil {
		t.Fatal(err)
	}
	rd, err := c.WatchDir(ctx, DirOptions{Marker: true})
	if err != nil {
		t.Fatal(err)
	}
	nd, err := c.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	<-ran
	if s, err := rd.Next(ctx); err != nil || string(s.Values["a"]) != "1" {
		t.Fatalf("the first Next after the executor stopped = %v, %v; want the snapshot delivered before", s.Values, err)
	}
	if s, err := nd.Next(ctx); err != nil || !s.Exists {
		t.Fatalf("the node Reader's first Next after the executor stopped = %+v, %v; want the root's snapshot delivered before", s, err)
	}
	for name, r := range map[string]*Reader{"WatchDir": rd, "Watch": nd} {
		if _, err := r.Next(ctx); !errors.Is(err, task.ErrClosed) {
			t.Errorf("%s Reader.Next after the executor stopped = %v, want task.ErrClosed", name, err)
		}
		if err := r.Stop(ctx); err != nil {
			t.Errorf("%s Reader.Stop after the executor stopped = %v", name, err)
		}
	}
	if s, ok := rd.Latest(); !ok || string(s.Values["a"]) != "1" {
		t.Errorf("Latest after the executor stopped = %v, %v", s.Values, ok)
	}
	calls := []struct {
		name string
		f    func(context.Context) error
	}{
		{"Client.Update", func(ctx context.Context) error { return c.Update(ctx, map[string][]byte{"a": []byte("2")}) }},
		{"Client.UpdateMarked", func(ctx context.Context) error {
			return c.UpdateMarked(ctx, map[string][]byte{"a": []byte("2")})
		}},
		{"Client.WatchDir", func(ctx context.Context) error { _, err := c.WatchDir(ctx, DirOptions{}); return err }},
		{"Client.Watch", func(ctx context.Context) error { _, err := c.Watch(ctx); return err }},
	}
	ended, end := context.WithCancel(ctx)
	end()
	for _, cl := range calls {
		if err := cl.f(ctx); !errors.Is(err, task.ErrClosed) {
			t.Errorf("%s after the executor stopped = %v, want task.ErrClosed", cl.name, err)
		}
		if err := cl.f(ended); err == nil || errors.Is(err, task.ErrClosed) && cl.name == "Client.UpdateMarked" {
			t.Errorf("%s with an ended ctx after the executor stopped = %v, want an error (ctx's)", cl.name, err)
		}
	}
	if d, _, ok := srv.NodeData("/review/stopped/a"); !ok || string(d) != "1" {
		t.Errorf("/review/stopped/a = %q after the executor stopped, want 1", d)
	}
}

// Holds: one Client and one Reader shared by several goroutines (actors
// of the simulation on one executor), with contexts that end at drawn
// steps: four writers, each in turn with Update and UpdateMarked, write
// entries a and b with one generation; two goroutines call Next on one
// Reader (with the marker honoured). No snapshot a goroutine gets is half
// applied (a and b of one generation), a goroutine's snapshots never go
// back (the generations a writer wrote only grow as it sees them), no
// marker is left, and the Reader ends at the server's state.
func TestOneClientFromManyGoroutines(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			w, err := sim.New(sim.Config{Seed: seed, Clients: 1, InJobEnds: true})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			c := mustClient(t, w.Execs[0], "/cfg")
			var r *Reader
			opened := false
			w.Go(0, func(a *sim.Actor) {
				r, err = c.WatchDir(a.Context(), DirOptions{Marker: true})
				opened = true
			})
			if !w.Settle(func() bool { return opened }) || err != nil {
				t.Fatalf("WatchDir: %v", err)
			}
			const writers, rounds = 4, 3
			finished := 0
			for i := range writers {
				w.Go(0, func(a *sim.Actor) {
					defer func() { finished++ }()
					for g := range rounds {
						v := []byte(fmt.Sprint(10*(g+1) + i)) // writer i's generation g+1
						ctx, cancel := a.CancelAfterSteps(a.Context(), a.Rand().IntN(30))
						var err error
						if (g+i)%2 == 0 {
							err = c.Update(ctx, map[string][]byte{"a": v, "b": v})
						} else {
							err = c.UpdateMarked(ctx, map[string][]byte{"a": v, "b": v})
						}
						cancel()
						if err != nil && !errors.Is(err, task.ErrCanceled) && !errors.Is(err, context.Canceled) {
							t.Errorf("writer %d round %d: %v", i, g, err)
						}
					}
				})
			}
			stopRead := false
			readers := 0
			for range 2 {
				w.Go(0, func(a *sim.Actor) {
					defer func() { readers++ }()
					last := map[int]int{} // writer: generation seen last
					for !stopRead {
						ctx, cancel := a.CancelAfterSteps(a.Context(), 5+a.Rand().IntN(30))
						s, err := r.Next(ctx)
						cancel()
						if errors.Is(err, ErrStopped) && stopRead {
							return
						}
						if err != nil {
							if !errors.Is(err, task.ErrCanceled) {
								t.Errorf("Next: %v", err)
								return
							}
							continue
						}
						av, bv := string(s.Values["a"]), string(s.Values["b"])
						if av != bv {
							t.Errorf("half-applied snapshot: a=%s b=%s", av, bv)
							continue
						}
						if av == "" {
							continue // the first: no configuration yet
						}
						var n int
						if _, err := fmt.Sscan(av, &n); err != nil {
							t.Errorf("snapshot a=%q", av)
							continue
						}
						if n/10 < last[n%10] {
							t.Errorf("writer %d's generation %d after %d", n%10, n/10, last[n%10])
						}
						last[n%10] = n / 10
					}
				})
			}
			if !w.Settle(func() bool { return finished == writers }) {
				t.Fatalf("%d of %d writers finished", finished, writers)
			}
			w.Settle(func() bool {
				_, _, marked := w.Server.NodeData("/cfg/" + MarkerName)
				return !marked
			})
			if _, _, marked := w.Server.NodeData("/cfg/" + MarkerName); marked {
				t.Fatal("the marker is left")
			}
			want, _, _ := w.Server.NodeData("/cfg/a")
			if !w.Settle(func() bool { s, ok := r.Latest(); return ok && string(s.Values["a"]) == string(want) }) {
				s, _ := r.Latest()
				t.Errorf("the Reader ends at a=%s, the server holds %s", s.Values["a"], want)
			}
			stopRead = true
			w.Go(0, func(a *sim.Actor) { _ = r.Stop(a.Context()) })
			if !w.Settle(func() bool { return readers == 2 }) {
				t.Fatal("the readers never returned after Stop")
			}
		})
	}
}

// Client.UpdateMarked's doc: "Once started, the update is not abandoned
// half-way, with the marker standing: when ctx ends first, UpdateMarked
// returns its error and the update goes on in the background until it is
// done, resumed on the next session after an expiry"; "With a ctx that
// has ended it does nothing". Its ctx ends at every step k of the world
// after the call, the writer's session expiring at step j or not: once
// the world settles, no marker is left, and the entries hold the update
// (all of them) unless the call returned ctx's error before anything was
// written, in which case they hold none of it. Holds.
func TestClientUpdateMarkedContextEndsAtEveryStep(t *testing.T) {
	var finished, interrupted, background int
	for k := 0; k <= 24; k++ {
		for j := -1; j <= 6; j += 2 {
			t.Run(fmt.Sprintf("cancel%d/expire%d", k, j), func(t *testing.T) {
				w, err := sim.New(sim.Config{Seed: uint64(10*k + j + 3), Clients: 2, InJobEnds: true})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				run(t, w, 1, Update("/cfg", map[string][]byte{"a": []byte("0"), "b": []byte("0"), "c": []byte("0")}))
				c := mustClient(t, w.Execs[0], "/cfg")
				done := false
				var upErr error
				w.Go(0, func(a *sim.Actor) {
					defer func() { done = true }()
					ctx, cancel := a.CancelAfterSteps(a.Context(), k)
					defer cancel()
					upErr = c.UpdateMarked(ctx, map[string][]byte{"a": []byte("1"), "b": []byte("1"), "c": []byte("1")})
				})
				for range j {
					w.Step()
				}
				if j >= 0 {
					w.Server.Expire(w.Conns[0])
				}
				if !w.Settle(func() bool { return done }) {
					t.Fatal("UpdateMarked never returned")
				}
				state := func() string {
					var s []string
					for _, n := range []string{"a", "b", "c", MarkerName} {
						d, _, ok := w.Server.NodeData("/cfg/" + n)
						if !ok {
							d = []byte("-")
						}
						s = append(s, n+"="+string(d))
					}
					return strings.Join(s, " ")
				}
				const all, none = "a=1 b=1 c=1 invalid=-", "a=0 b=0 c=0 invalid=-"
				w.Settle(func() bool { st := state(); return st == all || st == none })
				st := state()
				switch {
				case upErr == nil && st != all:
					t.Fatalf("UpdateMarked succeeded, the server holds %s", st)
				case upErr != nil && !errors.Is(upErr, task.ErrCanceled) && !errors.Is(upErr, context.Canceled):
					t.Fatalf("UpdateMarked: %v (server: %s)", upErr, st)
				case st != all && st != none:
					t.Fatalf("after UpdateMarked returned %v and the world settled, the server holds %s", upErr, st)
				}
				// A later update from another client is not held back.
				o := sim.Submit(w, 1, Update("/cfg", map[string][]byte{"a": []byte("2")}))
				if !w.Settle(func() bool { return o.Done }) || o.Err != nil {
					t.Fatalf("a later Update: done %v, %v (server before: %s)", o.Done, o.Err, st)
				}
				if upErr == nil {
					finished++
				} else {
					interrupted++
					if st == all {
						background++
					}
				}
			})
		}
	}
	t.Logf("%d UpdateMarked calls returned nil, %d their ctx's error (%d of them finished in the background)", finished, interrupted, background)
	if finished == 0 || background == 0 {
		t.Error("the context never ended during UpdateMarked once it had started, or always did")
	}
}

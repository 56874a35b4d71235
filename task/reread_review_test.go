package task_test

// Tests of the re-reads of task.Watch from an adversarial review.

import (
	"errors"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// reviewWait submits, on client i, set and a Wait on the watch it gives.
func reviewWait[W any](w *sim.World, i int, set task.Task[W], watch func(W) *task.Watch) *sim.Outcome[task.Event] {
	o := sim.Submit(w, i, task.Task[task.Event](func(s *task.Scope, k task.Cont[task.Event]) {
		task.Run(s, set, func(v W, err error) {
			if err != nil {
				k(task.Event{}, err)
				return
			}
			task.Run(s, watch(v).Wait(), k)
		})
	}))
	w.Drive()
	return o
}

// settleFor settles the world for periods of RecheckAfter (or until o
// ends).
func settleFor(w *sim.World, o *sim.Outcome[task.Event], periods int) {
	end := w.Clock.Now().Add(time.Duration(periods) * task.RecheckAfter(w.Timeout()))
	w.Settle(func() bool { return o.Done || !w.Clock.Now().Before(end) })
}

// Watch: "It never fires for a change it would not have fired for, and a
// notification that was sent comes before the re-read's reply, so only a
// withheld one is made up." A child watch on a node every session may
// read; the simulation's Counters fault (World.SetCounters, "takes no
// zxid and fires no watch") moves the node's cversion, with no child
// created or deleted and nothing withheld. The re-read compared Cversion
// and made up a NodeChildrenChanged the server never sent nor withheld
// (fails on the code before it compared Pzxid).
func TestWatchRereadIgnoresACounterSetByHand(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1, RecheckWatches: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	if _, err := sim.Run(w, 0, task.Create("/n", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	o := reviewWait(w, 0, task.ChildrenW("/n"), func(cw task.ChildrenWatch) *task.Watch { return cw.Watch })
	if err := w.SetCounters("/n", 0, 1<<30); err != nil {
		t.Fatal(err)
	}
	start := w.Clock.Now()
	settleFor(w, o, 3)
	if o.Done {
		t.Fatalf("a child watch on an open node with no child changed fired %s after the Wait: %+v, %v", w.Clock.Now().Sub(start), o.V, o.Err)
	}
}

// bgTimers is how many background timers clk holds.
func bgTimers(clk *fakezk.Clock) int {
	clk.CountBackground(true)
	all := clk.Pending()
	clk.CountBackground(false)
	return all - clk.Pending()
}

// A wait abandoned by its deadline after one re-read came back with no
// change (the watch re-armed), or abandoned while a re-read is in flight,
// leaves no background timer behind and sends no more re-reads; nor does
// an executor closed while a wait is on.
func TestWatchRereadStopsWhenWaitsLeave(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration // the wait's timeout, in periods (8s each); 0: Close instead
	}{{"timeout 1.5 periods", 12 * time.Second}, {"timeout at the re-read", 8 * time.Second}, {"close", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := fakezk.NewClock(fakezk.Epoch)
			srv := fakezk.New(fakezk.Config{Clock: clk})
			conn := srv.Connect(fakezk.ConnConfig{Timeout: 4 * time.Second})
			var sent []string
			ex, err := executor.New(executor.Config{Conn: &logConn{Conn: conn, sent: &sent}, Clock: clk, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Shutdown()
			idle := func() {
				for ex.RunUntilIdle()+srv.RunUntilIdle() > 0 {
				}
			}
			executor.Submit(ex, task.Create("/n", nil, task.Persistent), func(string, error) {})
			idle()
			period := task.RecheckAfter(4 * time.Second)
			wait := task.Task[task.Event](func(s *task.Scope, k task.Cont[task.Event]) {
				task.Run(s, task.GetW("/n"), func(dw task.DataWatch, err error) {
					if err != nil {
						k(task.Event{}, err)
						return
					}
					task.Run(s, dw.Watch.Wait(), k)
				})
			})
			if tc.after > 0 {
				wait = c.Timeout(wait, tc.after)
			}
			var done bool
			var werr error
			executor.Submit(ex, wait, func(_ task.Event, err error) { done, werr = true, err })
			idle()
			if n := bgTimers(clk); n != 1 {
				t.Fatalf("%d background timers while waiting, want 1", n)
			}
			if tc.after == 0 {
				clk.Advance(period / 2)
				idle()
				ex.Close()
				idle()
			}
			for range 10 {
				clk.Advance(period / 2)
				idle()
			}
			if !done || werr == nil {
				t.Fatalf("wait: done %v, %v", done, werr)
			}
			if rereads := countSent(sent, "exists /n"); rereads == 0 && tc.after == 12*time.Second {
				t.Fatalf("no re-read while waiting: %v", sent)
			}
			sent = nil
			for range 10 {
				clk.Advance(period)
				idle()
			}
			if n := bgTimers(clk); n != 0 || len(sent) != 0 {
				t.Fatalf("after the wait ended (%v): %d background timers, sent %v", werr, n, sent)
			}
		})
	}
}

type logConn struct {
	*fakezk.Conn
	sent *[]string
}

func (c *logConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	*c.sent = append(*c.sent, req.OpName()+" "+req.NodePath())
	c.Conn.Do(req, done, watch)
}

func countSent(sent []string, what string) int {
	n := 0
	for _, s := range sent {
		if s == what {
			n++
		}
	}
	return n
}

// A watch of a session that expired fires EventNotWatching; a Wait on it
// made in the next session ends with that, not with an event the re-read
// would make up for a change made after the expiry.
func TestWatchWaitAfterExpiryIsNotWatching(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1, RecheckWatches: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	if _, err := sim.Run(w, 0, task.Create("/n", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	var watch *task.Watch
	first := reviewWait(w, 0, task.GetW("/n"), func(dw task.DataWatch) *task.Watch { watch = dw.Watch; return dw.Watch })
	w.Server.Expire(w.Conns[0])
	w.Settle(func() bool { return first.Done })
	if !first.Done || first.Err == nil {
		t.Fatalf("first wait: %+v, %v", first.V, first.Err)
	}
	if err := w.Server.AdminSetData("/n", []byte("x")); err != nil {
		t.Fatal(err)
	}
	o := sim.Submit(w, 0, watch.Wait())
	settleFor(w, o, 3)
	if !o.Done || o.V.Type == task.EventNodeDataChanged || !errors.Is(o.Err, task.ErrSessionExpired) {
		t.Fatalf("wait on the expired session's watch: done %v, %+v, %v", o.Done, o.V, o.Err)
	}
}

// A partition longer than the session timeout, a change made meanwhile
// (the watch's session may read it): the wait ends with the session's
// expiry, not an event made up by a re-read sent during the partition or
// after it.
func TestWatchRereadAcrossPartitionExpiry(t *testing.T) {
	for _, long := range []bool{false, true} {
		w, err := sim.New(sim.Config{Seed: 1, Clients: 1, RecheckWatches: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := sim.Run(w, 0, task.Create("/n", nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
		o := reviewWait(w, 0, task.GetW("/n"), func(dw task.DataWatch) *task.Watch { return dw.Watch })
		d := w.Timeout() / 2
		if long {
			d = 3 * w.Timeout()
		}
		w.Server.Partition(w.Conns[0], d, false)
		if err := w.Server.AdminSetACL("/n", []task.ACL{task.DigestACL(task.PermAll, "operator", "secret")}); err != nil {
			t.Fatal(err)
		}
		if err := w.Server.AdminSetData("/n", []byte("x")); err != nil {
			t.Fatal(err)
		}
		settleFor(w, o, 3)
		switch {
		case !o.Done:
			t.Fatalf("long %v: the wait never ended", long)
		case long && !errors.Is(o.Err, task.ErrSessionExpired):
			t.Fatalf("long %v: wait = %+v, %v; want the session's expiry", long, o.V, o.Err)
		case !long && (o.Err != nil || o.V.Type != task.EventNodeDataChanged):
			t.Fatalf("long %v: wait = %+v, %v; want NodeDataChanged", long, o.V, o.Err)
		}
	}
}

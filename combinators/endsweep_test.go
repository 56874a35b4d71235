package combinators_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/scriptconn"
	"github.com/zkflow/zkflow/task"
)

// endRig is an executor on a scripted connection and a fakezk clock.
type endRig struct {
	ex   *executor.Executor
	conn *scriptconn.Conn
	clk  *fakezk.Clock
	errs []error
	base int
}

func newEndRig(t *testing.T) *endRig {
	r := &endRig{conn: scriptconn.New(), clk: fakezk.NewClock(fakezk.Epoch)}
	ex, err := executor.New(executor.Config{Conn: r.conn, Clock: r.clk, Seed: 1, NoSyncAfterReconnect: true,
		OnError: func(err error) { r.errs = append(r.errs, err) }})
	if err != nil {
		t.Fatal(err)
	}
	r.ex = ex
	ex.RunUntilIdle()
	r.conn.Connect(1)
	ex.RunUntilIdle()
	r.base = r.clk.Pending()
	return r
}

type endCounts struct {
	points, cleanups, ondone, innerCleanups int
	times                                   []time.Time
}

func endFlow(n *endCounts, clk *fakezk.Clock) task.Task[int] {
	mark := func() { n.points++; n.times = append(n.times, clk.Now()) }
	inner := task.Flow(func(f *task.F) (int, error) {
		f.Scope().Defer(task.Func(func(*task.Scope) (task.Unit, error) { n.innerCleanups++; return task.Unit{}, nil }))
		if _, err := task.Await(f, task.Get("/e")); err != nil {
			return 0, err
		}
		_, err := task.Await(f, c.Sleep(time.Second))
		return 1, err
	})
	return task.Flow(func(f *task.F) (int, error) {
		f.Scope().Defer(task.Func(func(*task.Scope) (task.Unit, error) { n.cleanups++; return task.Unit{}, nil }))
		f.Scope().OnDone(func(error) { n.ondone++ })
		steps := []func() error{
			func() error { _, err := task.Await(f, task.Get("/a")); return err },
			func() error { _, err := task.Await(f, c.Sleep(time.Second)); return err },
			func() error {
				_, err := task.Await(f, c.Retry(task.Get("/b"), c.Policy{Attempts: 3, Backoff: c.Backoff{Initial: time.Second}}))
				return err
			},
			func() error {
				_, err := task.Await(f, c.All(c.Map(task.Get("/c"), func(task.Data) int { return 0 }),
					c.Map(c.Sleep(time.Second), func(task.Unit) int { return 0 })))
				return err
			},
			func() error { _, err := task.Await(f, c.Timeout(task.Get("/d"), 5*time.Second)); return err },
			func() error { _, err := task.Await(f, c.Deadline(inner, clk.Now().Add(time.Hour))); return err },
			func() error {
				_, err := task.Await(f, c.Loop(0, func(i int) bool { return i < 2 }, func(i int) task.Task[int] {
					return c.Map(c.Sleep(time.Second), func(task.Unit) int { return i + 1 })
				}))
				return err
			},
			func() error {
				_, err := task.Await(f, c.OnError(task.Get("/f"), func(error) task.Task[task.Data] { return c.Seq(c.Sleep(time.Second), task.Get("/g")) }, task.ErrNoNode))
				return err
			},
		}
		for _, st := range steps {
			mark()
			if err := st(); err != nil {
				return 0, err
			}
		}
		mark()
		return 42, nil
	})
}

// drive answers requests ("/b" lost once, "/f" with NoNode) and moves the
// clock until the outcome is in; at point at (the executor idle) it calls
// end, once. Late replies are answered at the end.
func (r *endRig) drive(n *endCounts, calls *int, at int, end func()) {
	ended := end == nil
	bLost := false
	for i := 0; i < 1000 && *calls == 0; i++ {
		r.ex.RunUntilIdle()
		if !ended && n.points == at {
			ended = true
			end()
			r.ex.RunUntilIdle()
			continue
		}
		if p := r.conn.Pending(); len(p) > 0 {
			for _, call := range p {
				switch {
				case call.Req.NodePath() == "/b" && !bLost:
					bLost = true
					call.Fail(task.ErrConnectionLoss)
				case call.Req.NodePath() == "/f":
					call.Fail(task.ErrNoNode)
				default:
					call.Reply(task.Response{})
				}
			}
			continue
		}
		if !r.clk.AdvanceToNext() {
			if ended {
				break
			}
		}
	}
	// answer what is left (late results), run to idle
	for _, call := range r.conn.Pending() {
		call.Reply(task.Response{})
	}
	r.ex.RunUntilIdle()
}

// TestFlowEndedAtEveryAwait ends one flow at each of its Awaits, in turn,
// in each way a flow ends: Flow.Cancel, the session's expiry, a cancel
// while suspended, the executor's Shutdown, and a Deadline (in the middle
// of a wait, and at the very instant a wait ends). The flow awaits an
// operation, a Sleep, a Retry with backoff (its first attempt lost), an
// All, a Timeout, an inner flow under a Deadline, a Loop and an OnError.
// It checks what the package docs promise of each end: the continuation
// is called exactly once, with the end's error (errors.Is); the cleanup
// the flow registered with Defer runs once, its OnDone callback once on a
// cancellation; no timer is left on the clock; nothing is reported. It
// held on the code as it was; it keeps the promises together.
func TestFlowEndedAtEveryAwait(t *testing.T) {
	// Dry run: the points and their times.
	var ref endCounts
	{
		r := newEndRig(t)
		var calls int
		var v int
		var err error
		executor.Submit(r.ex, endFlow(&ref, r.clk), func(x int, e error) { calls++; v, err = x, e })
		r.drive(&ref, &calls, -1, nil)
		if calls != 1 || err != nil || v != 42 {
			t.Fatalf("dry run: calls %d v %d err %v", calls, v, err)
		}
		if ref.cleanups != 1 || ref.ondone != 0 || ref.innerCleanups != 1 {
			t.Fatalf("dry run counts %+v", ref)
		}
		r.ex.Shutdown()
		t.Logf("points %d times %v", ref.points, ref.times)
	}
	type ender struct {
		name string
		want error
		fn   func(r *endRig, fl *executor.Flow)
	}
	enders := []ender{
		{"cancel", task.ErrCanceled, func(r *endRig, fl *executor.Flow) { fl.Cancel() }},
		{"expire", task.ErrSessionExpired, func(r *endRig, fl *executor.Flow) { r.conn.Expire() }},
		{"suspend+cancel", task.ErrCanceled, func(r *endRig, fl *executor.Flow) { r.conn.Suspend(); r.ex.RunUntilIdle(); fl.Cancel() }},
		{"shutdown", task.ErrClosed, func(r *endRig, fl *executor.Flow) { r.ex.Shutdown() }},
	}
	for p := 1; p <= ref.points; p++ {
		for _, e := range enders {
			t.Run(fmt.Sprintf("%s@%d", e.name, p), func(t *testing.T) {
				r := newEndRig(t)
				defer r.ex.Shutdown()
				var n endCounts
				var calls int
				var err error
				var fl *executor.Flow
				fl = executor.Submit(r.ex, endFlow(&n, r.clk), func(_ int, e error) { calls++; err = e })
				r.drive(&n, &calls, p, func() { e.fn(r, fl) })
				if e.name == "expire" {
					r.conn.Connect(2)
					r.ex.RunUntilIdle()
				}
				if e.name == "suspend+cancel" {
					r.conn.Connect(1)
					r.ex.RunUntilIdle()
				}
				r.ex.RunUntilIdle()
				r.check(t, &n, calls, err, e.want, p == ref.points)
			})
		}
	}
	// Deadlines: in the middle of each wait, and exactly at the instant the wait ends.
	for p := 1; p < ref.points; p++ {
		for _, mid := range []bool{true, false} {
			at := ref.times[p]
			if mid {
				at = ref.times[p-1].Add(ref.times[p].Sub(ref.times[p-1]) / 2)
			}
			if !at.After(ref.times[p-1]) {
				continue
			}
			t.Run(fmt.Sprintf("deadline@%d,mid=%v", p, mid), func(t *testing.T) {
				r := newEndRig(t)
				defer r.ex.Shutdown()
				var n endCounts
				var calls int
				var err error
				executor.Submit(r.ex, c.Deadline(endFlow(&n, r.clk), at), func(_ int, e error) { calls++; err = e })
				r.drive(&n, &calls, -1, nil)
				r.check(t, &n, calls, err, task.ErrDeadlineExceeded, false)
			})
		}
	}
}

func (r *endRig) check(t *testing.T, n *endCounts, calls int, err, want error, mayFinish bool) {
	t.Helper()
	if calls != 1 {
		t.Fatalf("continuation called %d times", calls)
	}
	if err == nil && mayFinish {
		return
	}
	if !errors.Is(err, want) {
		t.Errorf("err %v, want %v", err, want)
	}
	if !errors.Is(want, task.ErrClosed) {
		if n.cleanups != 1 {
			t.Errorf("cleanups %d", n.cleanups)
		}
		if n.ondone != 1 {
			t.Errorf("ondone %d", n.ondone)
		}
	}
	if n.innerCleanups > 1 || n.cleanups > 1 || n.ondone > 1 {
		t.Errorf("counts %+v", *n)
	}
	if !errors.Is(want, task.ErrClosed) && !errors.Is(want, task.ErrSessionExpired) {
		if p := r.clk.Pending(); p != r.base {
			t.Errorf("%d timers pending, want %d", p, r.base)
		}
	}
	if len(r.errs) > 0 && !errors.Is(want, task.ErrClosed) {
		t.Errorf("reported errors %v", r.errs)
	}
}

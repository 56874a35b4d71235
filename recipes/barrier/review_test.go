package barrier_test

// Promises of the package's docs tried by a second adversarial review
// (see promise_test.go for the first). Each test names the sentence it
// checks and the schedule; whether it failed on the code before its fix
// is said in its comment.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
)

// Participant.Leave: "If the caller's scope ends first, the participant's
// node is still deleted, by a cleanup flow of its own"; DoubleBarrier:
// "one value may be shared by any number of flows and executors". A
// participant entered on client 0 (the lowest of two) is left through the
// task face on client 1, whose session expired once (its epoch is 2, the
// participant's 1), with a deadline that passes while the lowest waits
// for the highest. The cleanup took the other executor's epoch for the
// end of the participant's session and deleted nothing: the node stayed
// while client 0's session lived, and the other participant's Leave
// waited for it. Fails on the code before the fix.
func TestLeaveOnAnotherExecutorDeletesTheNodePastItsDeadline(t *testing.T) {
	w := newTestWorld(t, 47, 3)
	old, _ := w.Execs[1].Current()
	w.Server.Expire(w.Conns[1])
	if !w.Settle(func() bool { s, st := w.Execs[1].Current(); return st == task.StateConnected && s.ID != old.ID }) {
		t.Fatal("client 1 never got a new session")
	}
	d, _ := barrier.NewDouble("/review/elsewhere", 2)
	e0 := sim.Submit(w, 0, d.Enter())
	w.Drive() // e0's node first: the lowest
	e2 := sim.Submit(w, 2, d.Enter())
	if !w.Settle(func() bool { return e0.Done && e2.Done }) || e0.Err != nil || e2.Err != nil {
		t.Fatalf("enter: %+v %+v", e0, e2)
	}
	o := &sim.Outcome[task.Unit]{}
	executor.SubmitWith(w.Execs[1], e0.V.Leave(), executor.Options{Deadline: w.Clock.Now().Add(time.Second)},
		func(_ task.Unit, err error) { o.Err, o.Done = err, true })
	if !w.Settle(func() bool { return o.Done }) || !errors.Is(o.Err, task.ErrDeadlineExceeded) {
		t.Fatalf("leave on client 1 = %+v, want the deadline's error (the lowest waits for the highest)", o)
	}
	l2 := sim.Submit(w, 2, e2.V.Leave())
	settleFor(w, 30*time.Second)
	if _, ok := w.NodeStat(e0.V.Path()); ok {
		t.Fatalf("the Leave's deadline passed on another executor: the participant's node %s is still there 30s later (its session live), and the other Leave has returned: %v",
			e0.V.Path(), l2.Done)
	}
	if !l2.Done || l2.Err != nil {
		t.Fatalf("the other participant's Leave: %+v", l2)
	}
	for _, err := range w.Errs {
		t.Errorf("reported: %v", err)
	}
}

// Holds (no other test removes a barrier with children or sets one with
// too much data through a Client): Barrier.Remove, "A node with children
// fails with an error wrapping task.ErrNotEmpty", on both faces, and the
// barrier stays up (Wait still holds); Client.Set with data over the
// limit fails with task.ErrDataTooLarge at once, on every session
// (AwaitAcrossExpiry does not make it again).
func TestRemoveWithChildrenAndSetTooLarge(t *testing.T) {
	w := newTestWorld(t, 48, 2)
	g, _ := barrier.NewClient(w.Execs[0], "/review/gate")
	big, _ := barrier.NewClient(w.Execs[0], "/review/big/gate")
	var errs [4]error
	done := false
	w.Go(0, func(a *sim.Actor) {
		defer func() { done = true }()
		ctx, cancel := a.WithTimeout(a.Context(), time.Minute)
		defer cancel()
		if err := g.Set(ctx, nil); err != nil {
			t.Error(err)
			return
		}
		if _, err := sim.Run(w, 1, task.Create("/review/gate/child", nil, task.Persistent)); err != nil {
			t.Error(err)
			return
		}
		_, errs[0] = sim.Run(w, 1, g.Barrier().Remove())
		errs[1] = g.Remove(ctx)
		short, sc := a.WithTimeout(ctx, time.Second)
		errs[2] = g.Wait(short)
		sc()
		errs[3] = big.Set(ctx, make([]byte, task.MaxDataSize))
	})
	if !w.Settle(func() bool { return done }) {
		t.Fatal("stuck")
	}
	for i, err := range errs[:2] {
		var oe *task.OpError
		if !errors.Is(err, task.ErrNotEmpty) || !errors.As(err, &oe) {
			t.Errorf("Remove %d of a barrier with a child = %v, want an *OpError with ErrNotEmpty", i, err)
		}
	}
	if !errors.Is(errs[2], task.ErrDeadlineExceeded) {
		t.Errorf("Wait on the barrier whose Remove failed = %v, want it held until its deadline", errs[2])
	}
	if !errors.Is(errs[3], task.ErrDataTooLarge) {
		t.Errorf("Client.Set of too much data = %v, want task.ErrDataTooLarge", errs[3])
	}
	if _, up := w.NodeStat("/review/gate"); !up {
		t.Error("the barrier went down")
	}
	if _, up := w.NodeStat("/review/big/gate"); up {
		t.Error("the barrier with too much data is up")
	}
}

// Holds (no other test calls a Client after its executor stopped): every
// blocking method returns task.ErrClosed at once, none waits for ever; a
// Remove whose ctx had ended, still going on in the background when the
// executor stopped, does not hold the next Set (its count ended with the
// flow), and a Remove with an ended ctx returns that ctx's error. Real
// goroutines; the 10s context is only a failure bound.
func TestCallsAfterTheExecutorStopped(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	conn := &deleteHolder{Conn: srv.Connect(fakezk.ConnConfig{}), path: "/review/stopped/gate", held: make(chan struct{})}
	ex, err := executor.New(executor.Config{Conn: conn, Clock: srv.Clock(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	run, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = ex.Run(run) }()
	defer func() { stop(); <-ran }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, _ := barrier.NewClient(ex, "/review/stopped/gate")
	d, _ := barrier.NewDoubleClient(ex, "/review/stopped/round", 1)
	p, err := d.Enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Set(ctx, nil); err != nil {
		t.Fatal(err)
	}
	ended, end := context.WithCancel(ctx)
	end()
	if err := g.Remove(ended); !errors.Is(err, task.ErrCanceled) {
		t.Fatalf("Remove with an ended ctx = %v", err)
	}
	select {
	case <-conn.held: // the Remove's delete is held: it goes on in the background
	case <-ctx.Done():
		t.Fatal("the delete was never sent")
	}
	stop()
	<-ran
	calls := []struct {
		name string
		f    func() error
	}{
		{"Client.Set", func() error { return g.Set(ctx, nil) }},
		{"Client.Wait", func() error { return g.Wait(ctx) }},
		{"Client.Remove", func() error { return g.Remove(ctx) }},
		{"DoubleClient.Leave", func() error { return d.Leave(ctx, p) }},
		{"DoubleClient.Enter", func() error { _, err := d.Enter(ctx); return err }},
	}
	for _, c := range calls {
		if err := c.f(); !errors.Is(err, task.ErrClosed) {
			t.Errorf("%s after the executor stopped = %v, want task.ErrClosed", c.name, err)
		}
	}
	if err := g.Remove(ended); !errors.Is(err, task.ErrCanceled) {
		t.Errorf("Remove with an ended ctx after the executor stopped = %v, want its ctx's error", err)
	}
}

package barrier_test

// Promises of the package's docs tried by an adversarial review: each
// test names the sentence it checks and the schedule. The first four
// fail on the code before their fix; the last two held, and check what
// no other test does.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
)

// settleFor drives w for d of simulated time.
func settleFor(w *sim.World, d time.Duration) {
	until := w.Clock.Now().Add(d)
	w.Settle(func() bool { return !w.Clock.Now().Before(until) })
}

// Package doc: "A DoubleClient's Enter first waits for the cleanup of its
// own failed Enter, so one DoubleClient never has two participant nodes at
// once (they would count twice)"; Client: "its methods are safe from any
// goroutine". Two goroutines call Enter on one DoubleClient of a barrier
// for 2, and nobody else enters: both passed, one process (one session)
// counted twice. The second is refused now.
func TestConcurrentEntersOfOneDoubleClient(t *testing.T) {
	w := newTestWorld(t, 41, 1)
	dc, err := barrier.NewDoubleClient(w.Execs[0], "/promise/conc", 2)
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		p    *barrier.Participant
		err  error
		done bool
	}
	rs := make([]*res, 2)
	for i := range rs {
		r := &res{}
		rs[i] = r
		w.Go(0, func(a *sim.Actor) {
			ctx, cancel := a.WithTimeout(a.Context(), 30*time.Second)
			defer cancel()
			r.p, r.err = dc.Enter(ctx)
			r.done = true
		})
	}
	if !w.Settle(func() bool { return rs[0].done && rs[1].done }) {
		t.Fatal("the Enters never returned")
	}
	if rs[0].err == nil && rs[1].err == nil {
		st0, _ := w.NodeStat(rs[0].p.Path())
		st1, _ := w.NodeStat(rs[1].p.Path())
		t.Fatalf("one DoubleClient passed a barrier for 2 alone, with two participant nodes of session %#x at once: %s (owner %#x) and %s (owner %#x)",
			w.Conns[0].SessionID(), rs[0].p.Path(), st0.EphemeralOwner, rs[1].p.Path(), st1.EphemeralOwner)
	}
	if !errors.Is(rs[0].err, task.ErrInvalidArgument) && !errors.Is(rs[1].err, task.ErrInvalidArgument) {
		t.Fatalf("Enters = %v, %v; want the second refused while the first runs", rs[0].err, rs[1].err)
	}
}

// DoubleClient.Leave: "p's node is deleted whatever ctx: when ctx has
// ended, or ends first, Leave returns its error ... and the delete goes on
// in the background"; its refusal reads "Leave of a participant not
// entered through this DoubleClient: ErrInvalidArgument". A participant
// entered through client 0's DoubleClient is given to client 1's
// DoubleClient on the same directory (whose session expired once, so its
// epoch is 2), with an ended ctx: Leave was accepted (not refused),
// returned the ctx's error, and the node was never deleted: it stayed
// while client 0's session lived. It is refused now.
func TestLeaveThroughAnotherExecutorsDoubleClient(t *testing.T) {
	w := newTestWorld(t, 42, 2)
	old, _ := w.Execs[1].Current()
	w.Server.Expire(w.Conns[1])
	if !w.Settle(func() bool { s, st := w.Execs[1].Current(); return st == task.StateConnected && s.ID != old.ID }) {
		t.Fatal("client 1 never got a new session")
	}
	const dir = "/promise/other"
	dc0, _ := barrier.NewDoubleClient(w.Execs[0], dir, 1)
	dc1, _ := barrier.NewDoubleClient(w.Execs[1], dir, 1)
	var p *barrier.Participant
	var enterErr, leaveErr error
	entered, left := false, false
	w.Go(0, func(a *sim.Actor) {
		p, enterErr = dc0.Enter(a.Context())
		entered = true
	})
	if !w.Settle(func() bool { return entered }) || enterErr != nil {
		t.Fatalf("enter: %v", enterErr)
	}
	w.Go(1, func(a *sim.Actor) {
		ctx, cancel := a.WithCancel(a.Context())
		cancel()
		leaveErr = dc1.Leave(ctx, p)
		left = true
	})
	if !w.Settle(func() bool { return left }) {
		t.Fatal("Leave never returned")
	}
	if !errors.Is(leaveErr, task.ErrInvalidArgument) {
		settleFor(w, 30*time.Second)
		_, there := w.NodeStat(p.Path())
		t.Fatalf("Leave through another executor's DoubleClient = %v, want ErrInvalidArgument (the participant's node still there 30s later: %v)", leaveErr, there)
	}
	left = false
	w.Go(0, func(a *sim.Actor) {
		leaveErr = dc0.Leave(a.Context(), p)
		left = true
	})
	if !w.Settle(func() bool { return left }) || leaveErr != nil {
		t.Fatalf("its own DoubleClient's Leave: %v", leaveErr)
	}
	if _, ok := w.NodeStat(p.Path()); ok {
		t.Fatalf("%s still there after its own DoubleClient's Leave", p.Path())
	}
}

// Participant.Leave: "Like any task, it does not start in a scope that
// has already ended (task.Run): to have the node deleted whatever the
// outcome of the work in between, register the leave with Scope.Defer
// once entered". A flow enters a barrier for 2, registers its Leave, and
// its work runs past its deadline: the leave runs all the same, and the
// other participant's Leave returns. (Run after the work on the ended
// scope, as a finally, the leave never started, while the doc said the
// node would be deleted.)
func TestLeaveRegisteredWithDeferRunsPastTheDeadline(t *testing.T) {
	w := newTestWorld(t, 43, 2)
	d, _ := barrier.NewDouble("/promise/late", 2)
	var p0 *barrier.Participant
	round := task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Run(s, d.Enter(), func(p *barrier.Participant, err error) {
			if err != nil {
				k(task.Unit{}, err)
				return
			}
			p0 = p
			s.Defer(p.Leave())                     // leave whatever the work's outcome
			task.Run(s, c.Sleep(2*time.Second), k) // the round's work, past the deadline
		})
	})
	o0 := sim.Submit(w, 0, c.Timeout(round, time.Second))
	e1 := sim.Submit(w, 1, d.Enter())
	w.Settle(func() bool { return o0.Done && e1.Done })
	if e1.Err != nil || p0 == nil {
		t.Fatalf("enter: %v, %v", e1.Err, o0.Err)
	}
	if !errors.Is(o0.Err, task.ErrDeadlineExceeded) {
		t.Fatalf("round = %v, want the deadline's error", o0.Err)
	}
	l1 := sim.Submit(w, 1, e1.V.Leave())
	settleFor(w, 30*time.Second)
	if _, ok := w.NodeStat(p0.Path()); ok {
		t.Fatalf("participant 0's scope ended, its Leave run after: its node %s is still there 30s later (its session live), and participant 1's Leave has returned: %v",
			p0.Path(), l1.Done)
	}
}

// Package doc, Errors: "constructors refuse ... a nil executor ...
// (task.ErrInvalidArgument)"; Client: "its methods are safe from any
// goroutine". A nil *Client or *DoubleClient is refused with
// ErrInvalidArgument, but a zero Client or DoubleClient (nil executor, nil
// barrier: not made by the constructors) panics.
func TestZeroClientsAreRefused(t *testing.T) {
	w := newTestWorld(t, 44, 1)
	d, _ := barrier.NewDouble("/promise/zero", 1)
	p, err := sim.Run(w, 0, d.Enter())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	calls := []struct {
		name string
		f    func() error
	}{
		{"Client.Set", func() error { return (&barrier.Client{}).Set(ctx, nil) }},
		{"Client.Wait", func() error { return (&barrier.Client{}).Wait(ctx) }},
		{"Client.Remove", func() error { return (&barrier.Client{}).Remove(ctx) }},
		{"DoubleClient.Enter", func() error { _, err := (&barrier.DoubleClient{}).Enter(ctx); return err }},
		{"DoubleClient.Leave", func() error { return (&barrier.DoubleClient{}).Leave(ctx, p) }},
	}
	for _, call := range calls {
		t.Run(call.name, func(t *testing.T) {
			var err error
			panicked := func() (v any) {
				defer func() { v = recover() }()
				err = call.f()
				return nil
			}()
			if panicked != nil {
				t.Fatalf("%s on a zero value panicked: %v; want task.ErrInvalidArgument", call.name, panicked)
			}
			if !errors.Is(err, task.ErrInvalidArgument) {
				t.Fatalf("%s on a zero value = %v, want task.ErrInvalidArgument", call.name, err)
			}
		})
	}
}

// Holds (no existing test calls the blocking faces on the executor's
// goroutine): every blocking method called from a step fails at once with
// executor.ErrOnExecutor rather than waiting on the goroutine that would
// have to run its flow; DoubleClient.Leave there still deletes the
// participant's node ("p's node is deleted whatever ctx"), and
// Client.Remove still lifts the barrier.
func TestBlockingOnTheExecutorGoroutine(t *testing.T) {
	w := newTestWorld(t, 45, 1)
	ctx := context.Background()
	g, _ := barrier.NewClient(w.Execs[0], "/promise/onex/gate")
	dc, _ := barrier.NewDoubleClient(w.Execs[0], "/promise/onex/round", 1)
	if _, err := sim.Run(w, 0, g.Barrier().Set(nil)); err != nil {
		t.Fatal(err)
	}
	p, err := sim.Run(w, 0, dc.DoubleBarrier().Enter())
	if err != nil {
		t.Fatal(err)
	}
	errs := map[string]error{}
	_, err = sim.Run(w, 0, task.Func(func(*task.Scope) (task.Unit, error) {
		errs["Client.Set"] = g.Set(ctx, nil)
		errs["Client.Wait"] = g.Wait(ctx)
		_, errs["DoubleClient.Enter"] = dc.Enter(ctx)
		errs["DoubleClient.Leave"] = dc.Leave(ctx, p)
		errs["Client.Remove"] = g.Remove(ctx)
		return task.Unit{}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	for name, err := range errs {
		if !errors.Is(err, executor.ErrOnExecutor) {
			t.Errorf("%s on the executor goroutine = %v, want executor.ErrOnExecutor", name, err)
		}
	}
	settleFor(w, 5*time.Second)
	if _, ok := w.NodeStat(p.Path()); ok {
		t.Errorf("DoubleClient.Leave on the executor goroutine left the node %s", p.Path())
	}
	if _, ok := w.NodeStat(g.Barrier().Path()); ok {
		t.Errorf("Client.Remove on the executor goroutine left the barrier up")
	}
	if n := participantNodes(w, dc.DoubleBarrier().Dir()); len(n) != 0 {
		t.Errorf("participant nodes left: %v", n)
	}
}

// Holds (no existing test refuses a read): the package doc's errors, "an
// *task.OpError that a retry cannot settle (task.ErrNoAuth, say)", and "A
// failed Enter leaves no participant node". The directory's ACL lets
// everyone create and delete but not list: Enter (task face and
// DoubleClient) fails with ErrNoAuth at once (not at its ctx's end), and
// its node is gone; a participant that entered before the ACL changed
// fails its Leave with ErrNoAuth, and its node is deleted all the same.
func TestRefusedListingFailsAtOnceAndLeavesNoNode(t *testing.T) {
	w := newTestWorld(t, 46, 2)
	const dir = "/promise/noauth"
	d, _ := barrier.NewDouble(dir, 3)
	before, _ := barrier.NewDouble("/promise/noauth2", 1)
	pb, err := sim.Run(w, 0, before.Enter())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/promise", dir} {
		if _, err := sim.Run(w, 1, task.Create(p, nil, task.Persistent)); err != nil && !errors.Is(err, task.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	noRead := []task.ACL{{Perms: task.PermAll &^ task.PermRead, Scheme: "world", ID: "anyone"}}
	for _, p := range []string{dir, before.Dir()} {
		if _, err := sim.Run(w, 1, task.SetACL(p, noRead, task.AnyVersion)); err != nil {
			t.Fatal(err)
		}
	}
	o := sim.Submit(w, 0, d.Enter())
	w.Settle(func() bool { return o.Done })
	var oe *task.OpError
	if !errors.Is(o.Err, task.ErrNoAuth) || !errors.As(o.Err, &oe) {
		t.Errorf("Enter on an unreadable directory = %v, want an *OpError with ErrNoAuth", o.Err)
	}
	dc, _ := barrier.NewDoubleClient(w.Execs[0], dir, 3)
	var enterErr, leaveErr error
	done := false
	w.Go(0, func(a *sim.Actor) {
		ctx, cancel := a.WithTimeout(a.Context(), time.Hour)
		defer cancel()
		start := w.Clock.Now()
		_, enterErr = dc.Enter(ctx)
		if el := w.Clock.Now().Sub(start); el > time.Minute {
			enterErr = fmt.Errorf("after %v: %w", el, enterErr)
		}
		dcb, _ := barrier.NewDoubleClient(w.Execs[0], before.Dir(), before.Size())
		leaveErr = dcb.Leave(ctx, pb)
		done = true
	})
	if !w.Settle(func() bool { return done }) {
		t.Fatal("actor never finished")
	}
	if !errors.Is(enterErr, task.ErrNoAuth) || !errors.As(enterErr, &oe) {
		t.Errorf("DoubleClient.Enter on an unreadable directory = %v, want ErrNoAuth at once", enterErr)
	}
	if !errors.Is(leaveErr, task.ErrNoAuth) {
		t.Errorf("DoubleClient.Leave on an unreadable directory = %v, want ErrNoAuth", leaveErr)
	}
	settleFor(w, 5*time.Second)
	if _, ok := w.NodeStat(pb.Path()); ok {
		t.Errorf("the failed Leave left the node %s", pb.Path())
	}
	names, _ := w.Server.Children(dir)
	if len(names) != 0 {
		t.Errorf("failed Enters left %v", names)
	}
}

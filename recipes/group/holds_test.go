package group_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/group"
	"github.com/zkflow/zkflow/task"
)

// Promises that held under review, with no test of their own before.

// Member.Done and View.Done: closed when "the executor closed
// (task.ErrClosed)"; Watcher.Next "blocks until there is a difference,
// the view ends (its error), or ctx ends". Holds: a Client.Join waiting
// for an id another session holds, and a Watcher.Next waiting with nothing
// new, both return task.ErrClosed when the executor closes under them.
func TestBlockingCallsEndWhenTheExecutorCloses(t *testing.T) {
	w := newTestWorld(t, 1, 2)
	g, _ := group.New("/g")
	if _, err := sim.Run(w, 1, g.Join("x", nil)); err != nil {
		t.Fatal(err)
	}
	c, _ := group.NewClient(w.Execs[0], "/g")
	var joinErr, nextErr, watchNext error
	joinDone, nextDone := false, false
	w.Go(0, func(a *sim.Actor) {
		_, joinErr = c.Join(a.Context(), "x", nil) // held by client 1: waits
		joinDone = true
	})
	w.Go(0, func(a *sim.Actor) {
		wt, err := c.Watch(a.Context())
		if err != nil {
			nextErr = err
			nextDone = true
			return
		}
		_, watchNext = wt.Next(a.Context())
		_, nextErr = wt.Next(a.Context()) // nothing new: waits
		nextDone = true
	})
	settleFor(w, 5*time.Second)
	if joinDone || nextDone {
		t.Fatalf("not waiting: join %v %v, next %v %v", joinDone, joinErr, nextDone, nextErr)
	}
	w.Execs[0].Close()
	if !w.Settle(func() bool { return joinDone && nextDone }) {
		t.Fatalf("after Close: join returned %v, next returned %v", joinDone, nextDone)
	}
	t.Logf("join %v, first next %v, next %v", joinErr, watchNext, nextErr)
	if !errors.Is(joinErr, task.ErrClosed) || !errors.Is(nextErr, task.ErrClosed) {
		t.Fatalf("join %v next %v", joinErr, nextErr)
	}
}

// Client.Leave and Watcher.Stop: after the executor has closed they
// return nil (the session ended, and the node with it, or the view);
// Join and Watch fail with task.ErrClosed; a Watcher's Next returns what
// was reported before the end, then task.ErrClosed. Holds.
func TestClientCallsAfterClose(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	c, _ := group.NewClient(w.Execs[0], "/g")
	var wt *group.Watcher
	var m *group.Member
	done := false
	w.Go(0, func(a *sim.Actor) {
		defer func() { done = true }()
		var err error
		if m, err = c.Join(a.Context(), "x", nil); err != nil {
			t.Error(err)
			return
		}
		if wt, err = c.Watch(a.Context()); err != nil {
			t.Error(err)
		}
	})
	if !w.Settle(func() bool { return done }) || wt == nil {
		t.Fatal("setup")
	}
	w.Execs[0].Close()
	settleFor(w, time.Second)
	ctx := context.Background()
	_, jerr := c.Join(ctx, "y", nil)
	_, werr := c.Watch(ctx)
	_, nerr1 := wt.Next(ctx)
	_, nerr2 := wt.Next(ctx)
	serr := wt.Stop(ctx)
	lerr := c.Leave(ctx, m)
	t.Logf("join %v watch %v next %v / %v stop %v leave %v", jerr, werr, nerr1, nerr2, serr, lerr)
	if !errors.Is(jerr, task.ErrClosed) || !errors.Is(werr, task.ErrClosed) || nerr1 != nil || !errors.Is(nerr2, task.ErrClosed) || serr != nil || lerr != nil {
		t.Fatal("want ErrClosed from Join, Watch and the second Next, nil from the first Next (the members reported before), Stop and Leave")
	}
}

// PROTOCOL, Faults: "A node created again at the path by hand
// (persistent, or another session's ephemeral) is not ours: the keeper
// waits for it to go, then registers (Registered is false meanwhile), and
// Leave leaves it alone." Holds, for a persistent node made in one multi
// with the delete of the member's.
func TestOperatorsPersistentNodeAtAMembersPath(t *testing.T) {
	w := newTestWorld(t, 1, 2)
	g, _ := group.New("/g")
	m, err := sim.Run(w, 0, g.Join("x", []byte("mine")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 1, task.Multi(task.DeleteOp(m.Path(), task.AnyVersion), task.CreateOp(m.Path(), []byte("op"), task.Persistent))); err != nil {
		t.Fatal(err)
	}
	settleFor(w, 5*time.Second)
	if m.Registered() || m.Err() != nil {
		t.Fatalf("registered %v err %v", m.Registered(), m.Err())
	}
	if _, err := sim.Run(w, 0, m.Leave()); err != nil {
		t.Fatal(err)
	}
	if d, _, _ := w.NodeData(m.Path()); string(d) != "op" {
		t.Fatalf("operator's node: %q", d)
	}
	// again, with the keeper: operator deletes its node, member registers again.
	m2, err := sim.Run(w, 0, g.Join("y", []byte("mine")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 1, task.Multi(task.DeleteOp(m2.Path(), task.AnyVersion), task.CreateOp(m2.Path(), []byte("op"), task.Persistent))); err != nil {
		t.Fatal(err)
	}
	settleFor(w, 5*time.Second)
	if _, err := sim.Run(w, 1, task.Delete(m2.Path(), task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	settleFor(w, 5*time.Second)
	st, ok := w.Server.NodeStat(m2.Path())
	if !ok || st.EphemeralOwner != w.Conns[0].SessionID() || !m2.Registered() {
		t.Fatalf("y after the operator's node went: %v %+v registered %v", ok, st, m2.Registered())
	}
	if d, _, _ := w.NodeData(m2.Path()); string(d) != "mine" {
		t.Fatalf("data %q", d)
	}
}

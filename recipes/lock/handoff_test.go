package lock_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// Handoff in one round trip: a holder that waited marks its node; its
// successor, which saw the mark, holds when the node goes without
// listing; a holder whose first listing showed it lowest writes no mark.
func TestHandoffMarked(t *testing.T) {
	w, cnts := newWorld(t, 11, 3, fakezk.Config{})
	l := mustLock(t, "/locks/handoff")
	h0, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	o1 := sim.Submit(w, 1, l.Acquire())
	w.Drive()
	o2 := sim.Submit(w, 2, l.Acquire())
	w.Drive()
	if cnts[0].kinds["SetDataRequest"] != 0 {
		t.Fatal("a holder that found itself lowest marked its node")
	}
	if _, err := mustRun(t, w, 0, h0.Release()); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if !o1.Done || o1.Err != nil || o2.Done {
		t.Fatalf("after client 0 released: client 1 %+v, client 2 %+v", o1, o2)
	}
	h1 := o1.V
	d, err := mustRun(t, w, 0, task.Get(h1.Path()))
	if err != nil || !bytes.Equal(d.Data, lock.MarkData) || d.Stat.Version != 1 {
		t.Fatalf("client 1's node after it held: %q version %d, %v; want the mark at version 1", d.Data, d.Stat.Version, err)
	}
	// The mark changed the node's version: fenced writes still go through.
	if _, err := mustRun(t, w, 1, h1.Fenced(&task.CreateRequest{Path: "/fenced", Mode: task.Persistent})); err != nil {
		t.Fatalf("fenced write of a marked holder: %v", err)
	}
	if !h1.IsHeld() {
		t.Fatal("the mark taken for a change by someone else")
	}
	w.Drive()
	if h1.Err() != nil {
		t.Fatalf("holder's own mark ended its lock: %v", h1.Err())
	}
	lists := cnts[2].lists
	if _, err := mustRun(t, w, 1, h1.Release()); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if !o2.Done || o2.Err != nil {
		t.Fatalf("client 2 after client 1 released: %+v", o2)
	}
	if got := cnts[2].lists - lists; got != 0 {
		t.Fatalf("client 2 listed %d times after a marked predecessor went, want 0", got)
	}
	if _, err := mustRun(t, w, 2, o2.V.Release()); err != nil {
		t.Fatal(err)
	}
	noReportedErrors(t, w)
}

// The holder's mark is lost with the connection (not applied). The node
// watch and a fenced write started at once can reach the server before
// the mark's retry: the watch waits for the mark to settle instead of
// reading the node at its old version and taking the lock for lost, and
// the fenced write, refused for the version, is sent again once the mark
// has settled. Over seeds.
func TestHandoffMarkLost(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		w, cnts := newWorld(t, seed, 2, fakezk.Config{})
		l := mustLock(t, "/locks/marklost")
		h0, err := mustRun(t, w, 0, l.Acquire())
		if err != nil {
			t.Fatal(err)
		}
		o1 := sim.Submit(w, 1, l.Acquire())
		w.Drive()
		sim.Submit(w, 0, h0.Release())
		sets := cnts[1].kinds["SetDataRequest"]
		// Step the server one delivery at a time, so that client 1's
		// mark is still unapplied when it holds.
		for w.Execs[0].RunUntilIdle()+w.Execs[1].RunUntilIdle() >= 0 && !o1.Done {
			if !w.Server.Step() {
				t.Fatal("client 1 never acquired")
			}
		}
		if o1.Err != nil {
			t.Fatal(o1.Err)
		}
		h1 := o1.V
		if cnts[1].kinds["SetDataRequest"] != sets+1 {
			t.Fatal("client 1 did not send its mark on holding")
		}
		if st, _ := w.NodeStat(h1.Path()); st.Version != 0 {
			t.Fatalf("seed %d: the mark was applied before the drop: the history is not the one this test builds", seed)
		}
		w.Server.Drop(w.Conns[1], false)
		h1.IsHeld() // the node watch
		f := sim.Submit(w, 1, h1.Fenced(&task.CreateRequest{Path: fmt.Sprintf("/fenced%d", seed), Mode: task.Persistent}))
		w.Drive()
		if !f.Done || f.Err != nil {
			t.Fatalf("seed %d: fenced write after the mark was lost: %+v", seed, f)
		}
		if err := h1.Err(); err != nil {
			t.Fatalf("seed %d: lock lost: %v", seed, err)
		}
		d, err := mustRun(t, w, 0, task.Get(h1.Path()))
		if err != nil || !bytes.Equal(d.Data, lock.MarkData) {
			t.Fatalf("seed %d: client 1's node: %q, %v; want the mark", seed, d.Data, err)
		}
		if _, err := mustRun(t, w, 1, h1.Release()); err != nil {
			t.Fatal(err)
		}
	}
}

// markedGaveUp: client 0 holds; clients 1, 2 and 3 queue behind it, 1
// and 2 with a deadline. Client 1 gives up first (its node goes
// unmarked: client 2 lists and waits for client 0), then client 2 (client
// 3 lists and waits for client 0). It reports whether client 2 or 3
// acquired while client 0 held.
func markedGaveUp(t *testing.T) bool {
	w, _ := newWorld(t, 17, 4, fakezk.Config{})
	l := mustLock(t, "/locks/gaveup")
	h0, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	o1 := sim.Submit(w, 1, c.Timeout(l.Acquire(), time.Second))
	w.Drive()
	o2 := sim.Submit(w, 2, c.Timeout(l.Acquire(), 3*time.Second))
	w.Drive()
	o3 := sim.Submit(w, 3, l.Acquire())
	w.Drive()
	if !w.Settle(func() bool { return o1.Done }) || !errors.Is(o1.Err, task.ErrDeadlineExceeded) {
		t.Fatalf("client 1: %+v, want its deadline", o1)
	}
	w.Drive()
	both := o2.Done && o2.Err == nil
	if !both {
		if !w.Settle(func() bool { return o2.Done }) || !errors.Is(o2.Err, task.ErrDeadlineExceeded) {
			t.Fatalf("client 2: %+v, want its deadline", o2)
		}
		w.Drive()
		both = o3.Done && o3.Err == nil
	}
	if _, err := mustRun(t, w, 0, h0.Release()); err != nil {
		t.Fatal(err)
	}
	if o2.Done && o2.Err == nil {
		if _, err := mustRun(t, w, 2, o2.V.Release()); err != nil {
			t.Fatal(err)
		}
	}
	if !w.Settle(func() bool { return o3.Done }) || o3.Err != nil {
		t.Fatalf("client 3 after clients 0 and 2 released: %+v", o3)
	}
	return both
}

func TestHandoffWaitersGiveUp(t *testing.T) {
	if markedGaveUp(t) {
		t.Fatal("a waiter acquired while client 0 held (the waiters before it gave up)")
	}
}

// Each weaker rule falls for the history (not parallel: canaries are
// process-wide): a mark written at the create, or when a waiter is woken
// before it knows it holds, or holding on any predecessor's deletion, lets
// a waiter hold while client 0 does.
func TestHandoffCanariesCaught(t *testing.T) {
	for _, name := range []canary.Name{lock.MarkAtCreate, lock.MarkOnWake, lock.HoldOnAnyPred} {
		t.Run(string(name), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			if !markedGaveUp(t) {
				t.Fatalf("canary %s: two holders not produced", name)
			}
		})
	}
}

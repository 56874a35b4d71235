package idpersist_test

import (
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/idpersist"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// A watch another user of the session takes away (RemoveWatches, as a
// recursive cache of the path does when it stops, or user code calling
// it) is no news about the nodes: the watched node is neither written
// nor gone. These tests remove, on the waiting flow's own session, the
// watches the recipe has set on a path, and check that it waits on (it
// reads again, which watches again) and goes on when the node changes.

func removeWatches(t *testing.T, w *world, i int, path string, kind task.WatcherType) {
	t.Helper()
	if _, err := sim.Run(w.World, i, task.RemoveWatches(path, kind)); err != nil {
		t.Fatalf("RemoveWatches %s on client %d: %v", path, i, err)
	}
}

// settleFor drives w for d of simulated time.
func settleFor(w *world, d time.Duration) {
	until := w.Clock.Now().Add(d)
	w.Settle(func() bool { return !w.Clock.Now().Before(until) })
}

// leadFor runs a replica on client i until it has led and then for d
// more (its Run ends by that deadline, its candidate withdrawn; the
// nodes stay): the limit is written and nobody raises it any more.
func (w *world) leadFor(i int, d time.Duration) {
	w.t.Helper()
	r, err := idpersist.NewReplica(w.cfg)
	if err != nil {
		w.t.Fatal(err)
	}
	run := sim.Submit(w.World, i, c.Timeout(r.Run(), d))
	w.settle(func() bool { return run.Done })
	if r.Turns() == 0 {
		w.t.Fatalf("the replica on client %d never led: %v", i, run.Err)
	}
}

// Next "waits while the limit is reached or the nodes are missing". A
// generator waiting (a missing limit node: exists watch; the limit
// reached: data watch; a limit bound to another incarnation of the
// sequence: exists watch on the limit) whose watch on the limit node
// another user of its session removes failed with task.ErrWatchRemoved,
// its wait not over; it waits on now, and takes its ID once a leader
// raises the limit.
func TestNextOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	for _, tc := range []struct {
		name string
		// wait brings the world to a state where a generator waits.
		wait func(w *world)
	}{
		{"missing", func(w *world) {}},
		{"reached", func(w *world) {
			w.leadFor(0, time.Minute)
			w.settle(w.draw(1, 10))
		}},
		{"rebound", func(w *world) {
			w.leadFor(0, time.Minute)
			// An operator resets the sequence (a new incarnation, at
			// version 0): the limit is bound to the old one.
			if _, err := sim.Run(w.World, 2, task.Multi(&task.DeleteRequest{Path: w.cfg.Sequence, Version: task.AnyVersion},
				&task.CreateRequest{Path: w.cfg.Sequence, Data: seqid.Encode(0), Mode: task.Persistent, ACL: task.OpenACL})); err != nil {
				w.t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 71, 3, fakezk.Config{})
			tc.wait(w)
			before := len(w.order)
			next := sim.Submit(w.World, 1, idpersist.Next(w.cfg))
			settleFor(w, 10*time.Second)
			if next.Done {
				t.Fatalf("Next ended with no leader to raise the limit: %d, %v", next.V, next.Err)
			}
			removeWatches(t, w, 1, w.cfg.Limit, task.WatcherAny)
			settleFor(w, 10*time.Second)
			if next.Done {
				t.Fatalf("Next ended when another user of its session removed its watch on %s: %d, %v", w.cfg.Limit, next.V, next.Err)
			}
			w.replica(2)
			w.settle(func() bool { return next.Done })
			if next.Err != nil {
				t.Fatalf("Next after a leader raised the limit: %v", next.Err)
			}
			w.record(1, next.V)
			if len(w.order) != before+1 {
				t.Fatalf("ids %v", w.order)
			}
		})
	}
}

// Run "ends only with an error: ErrSessionExpired ..., ErrDeposed
// (candidate deleted ...), or a failure of the Store or of the nodes'
// data". A candidate waits on an exists watch of the next lower one;
// another user of its session removes that watch. Its Run ended with
// task.ErrWatchRemoved, its candidate withdrawn: a replica process that
// restarts only after expiry or deposition (Serve) stopped for good. It
// waits on now, and leads once the candidate before it goes (its
// session expires).
func TestCandidateOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	w := newWorld(t, 72, 3, fakezk.Config{})
	r0, err := idpersist.NewReplica(w.cfg)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := idpersist.NewReplica(w.cfg)
	if err != nil {
		t.Fatal(err)
	}
	lead := sim.Submit(w.World, 0, r0.Run())
	w.settle(r0.Leading)
	next := sim.Submit(w.World, 1, r1.Run())
	settleFor(w, time.Second)
	first, _ := w.LowestOwned(w.cfg.Election, 0, nil)
	if cands := w.Children(w.cfg.Election); len(cands) != 2 || first == "" || next.Done {
		t.Fatalf("candidates %v (the leader's %q), the second replica's Run done %v (%v)", cands, first, next.Done, next.Err)
	}
	removeWatches(t, w, 1, w.cfg.Election+"/"+first, task.WatcherAny)
	settleFor(w, time.Second)
	if next.Done {
		t.Fatalf("the waiting candidate's Run ended when another user of its session removed its watch on the one before it: %v", next.Err)
	}
	if got := w.Children(w.cfg.Election); len(got) != 2 {
		t.Fatalf("candidates %v after the watch was removed, want both", got)
	}
	w.Server.Expire(w.Conns[0])
	w.settle(func() bool { return lead.Done })
	w.settle(r1.Leading)
	w.settle(w.draw(2, 15))
	w.checkMark()
	if next.Done {
		t.Fatalf("the second replica's Run ended: %v", next.Err)
	}
}

// The leader, between raises, waits on its watches of the sequence and
// the limit; another user of its session removes them (of type Any on
// the limit, of type Data on the sequence). Its Run ended with
// task.ErrWatchRemoved (Serve returned it: "the first error that is
// neither expiry nor a lost leadership"), and no one raised the limit
// until another replica took over. It leads on now, and raises the
// limit as generators draw.
func TestLeaderOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	for _, tc := range []struct {
		name string
		path func(idpersist.Config) string
		kind task.WatcherType
	}{
		{"limit-any", func(cfg idpersist.Config) string { return cfg.Limit }, task.WatcherAny},
		{"sequence-data", func(cfg idpersist.Config) string { return cfg.Sequence }, task.WatcherData},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 73, 2, fakezk.Config{})
			r, err := idpersist.NewReplica(w.cfg)
			if err != nil {
				t.Fatal(err)
			}
			run := sim.Submit(w.World, 0, r.Run())
			w.settle(func() bool { return r.Leading() && w.node(1, w.cfg.Limit) > 0 })
			settleFor(w, time.Second)
			removeWatches(t, w, 0, tc.path(w.cfg), tc.kind)
			settleFor(w, time.Second)
			if run.Done || !r.Leading() {
				t.Fatalf("the leader's Run ended when another user of its session removed its watches on %s: done %v, %v", tc.path(w.cfg), run.Done, run.Err)
			}
			w.settle(w.draw(1, 25))
			w.checkMark()
			if run.Done || r.Turns() != 1 {
				t.Fatalf("the leader: Run done %v (%v), turns %d", run.Done, run.Err, r.Turns())
			}
		})
	}
}

// Under Config.Parent the leader waits on a children watch of Parent for
// names added and removed; another user of its session removes it (a
// recursive cache of Parent stopping). Its Run ended with
// task.ErrWatchRemoved. It leads on now, and serves a name added after.
func TestParentLeaderOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	m := multiOn(t, newWorld(t, 74, 3, fakezk.Config{}))
	r, err := idpersist.NewReplica(m.cfg)
	if err != nil {
		t.Fatal(err)
	}
	run := sim.Submit(m.World, 0, r.Run())
	m.settle(r.Leading)
	m.create(1, "a", 0)
	m.settle(m.drawNamed(1, "a", 5))
	removeWatches(t, m.world, 0, m.cfg.Parent, task.WatcherChildren)
	settleFor(m.world, time.Second)
	if run.Done || !r.Leading() {
		t.Fatalf("the leader's Run ended when another user of its session removed its children watch on %s: done %v, %v", m.cfg.Parent, run.Done, run.Err)
	}
	m.create(1, "b", 100)
	m.settle(allOf(m.drawNamed(1, "a", 15), m.drawNamed(2, "b", 15)))
	m.checkMarks("a", "b")
	if run.Done || r.Turns() != 1 {
		t.Fatalf("the leader: Run done %v (%v), turns %d", run.Done, run.Err, r.Turns())
	}
}

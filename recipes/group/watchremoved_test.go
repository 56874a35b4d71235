package group_test

import (
	"slices"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/group"
	"github.com/zkflow/zkflow/task"
)

// A watch another user of the session takes away (RemoveWatches, as a
// recursive cache of the path does when it stops, or a user's
// removeAllWatches) is no news about the group: the watched node or
// directory is neither gone nor changed. These tests remove, on the
// member's or view's own session, the watches the group has set on a
// path, and check that the Join, the Member or the View goes on as if
// nothing happened, and still hears the next change.

// removeWatches takes away client i's watches of type typ on path, as
// another user of its session.
func removeWatches(t *testing.T, w *sim.World, i int, path string, typ task.WatcherType) {
	t.Helper()
	if _, err := sim.Run(w, i, task.RemoveWatches(path, typ)); err != nil {
		t.Fatalf("RemoveWatches %s on client %d: %v", path, i, err)
	}
}

// "A Join of an id another member holds, of another session ..., waits
// until that member's node goes." Client 0's Join of "a" waits on client
// 1's node; another user of client 0's session removes its watches on
// that node. The Join failed with task.ErrWatchRemoved (the blocking
// Client's Join with "zk watch ...: watch removed"), the id still taken;
// it looks again and waits on now, and joins once the node goes.
func TestJoinOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	for _, typ := range []task.WatcherType{task.WatcherAny, task.WatcherData} {
		w := newTestWorld(t, 71, 2)
		g, _ := group.New("/g")
		other, err := sim.Run(w, 1, g.Join("a", []byte("theirs")))
		if err != nil {
			t.Fatal(err)
		}
		join := sim.Submit(w, 0, g.Join("a", []byte("mine")))
		w.Drive()
		if join.Done {
			t.Fatalf("type %v: Join of a taken id ended: %+v", typ, join)
		}
		removeWatches(t, w, 0, other.Path(), typ)
		settleFor(w, 10*time.Second)
		if join.Done {
			t.Fatalf("type %v: Join ended after another user of its session removed its watch on %s, the id still taken: %v", typ, other.Path(), join.Err)
		}
		if _, err := sim.Run(w, 1, other.Leave()); err != nil {
			t.Fatal(err)
		}
		if !w.Settle(func() bool { return join.Done }) || join.Err != nil {
			t.Fatalf("type %v: Join once the id was free: %+v", typ, join)
		}
		st, ok := w.Server.NodeStat(other.Path())
		if !ok || st.EphemeralOwner != w.Conns[0].SessionID() || !join.V.Registered() {
			t.Fatalf("type %v: after the Join: node %v %+v, registered %v", typ, ok, st, join.V.Registered())
		}
	}
}

// "While the Member has not left, it keeps the node: a keeper flow
// watches DIR/<id> with exists and registers again ... if the node is
// gone or is not ours." Another user of the member's session removes its
// watches on the member's node: the membership ended (Err "group: member
// /g/a: ... watch removed", Done closed), the node left to no keeper. It
// goes on now (the keeper reads and watches again), and hears the
// operator's delete after that. The same holds while the keeper waits
// for an operator's node at its path to go (step 3).
func TestMemberOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	w := newTestWorld(t, 72, 2)
	g, _ := group.New("/g")
	m, err := sim.Run(w, 0, g.Join("a", []byte("mine")))
	if err != nil {
		t.Fatal(err)
	}
	w.Drive()
	removeWatches(t, w, 0, m.Path(), task.WatcherAny)
	settleFor(w, 10*time.Second)
	if err := m.Err(); err != nil || !m.Registered() {
		t.Fatalf("the member ended after another user of its session removed its watch on %s: Registered %v, Err %v", m.Path(), m.Registered(), err)
	}
	// The node is watched again: an operator's delete is heard, and the
	// keeper registers again.
	before, _ := w.Server.NodeStat(m.Path())
	if _, err := sim.Run(w, 1, task.Delete(m.Path(), task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	registeredAgain := func() bool {
		st, ok := w.Server.NodeStat(m.Path())
		return ok && st.Czxid != before.Czxid && st.EphemeralOwner == w.Conns[0].SessionID() && m.Registered()
	}
	if !w.Settle(registeredAgain) {
		t.Fatalf("the operator's delete of %s unheard after the watch was set again (Err %v)", m.Path(), m.Err())
	}

	// The keeper waiting for an operator's node at the member's path.
	if _, err := sim.Run(w, 1, task.Multi(task.DeleteOp(m.Path(), task.AnyVersion), task.CreateOp(m.Path(), []byte("op"), task.Persistent))); err != nil {
		t.Fatal(err)
	}
	settleFor(w, 5*time.Second)
	if m.Registered() || m.Err() != nil {
		t.Fatalf("with the operator's node: registered %v err %v", m.Registered(), m.Err())
	}
	removeWatches(t, w, 0, m.Path(), task.WatcherAny)
	settleFor(w, 10*time.Second)
	if err := m.Err(); err != nil {
		t.Fatalf("the member ended after another user of its session removed its watch on the operator's node at %s: %v", m.Path(), err)
	}
	if _, err := sim.Run(w, 1, task.Delete(m.Path(), task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(registeredAgain) {
		t.Fatalf("the member did not register again once the operator's node went (Err %v)", m.Err())
	}
	if d, _, _ := w.NodeData(m.Path()); string(d) != "mine" {
		t.Fatalf("data %q", d)
	}
	if _, err := sim.Run(w, 0, m.Leave()); err != nil {
		t.Fatal(err)
	}
}

// "The view lists the directory with a watch, and after every
// notification ... lists and watches again." Another user of the view's
// session removes its watches on the directory (the children watch, by a
// RemoveWatches of type Any or Children): the view ended ("group: view of
// /g: zk watch /g: watch removed"; the blocking Watcher's Next failed
// with it) and followed the group no more. It lists and watches again
// now, and reports the next join.
func TestViewOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	for _, typ := range []task.WatcherType{task.WatcherAny, task.WatcherChildren} {
		w := newTestWorld(t, 73, 2)
		g, _ := group.New("/g")
		if _, err := sim.Run(w, 0, g.Join("a", nil)); err != nil {
			t.Fatal(err)
		}
		v, err := sim.Run(w, 1, g.Watch(func(group.Change) {}))
		if err != nil {
			t.Fatal(err)
		}
		w.Drive()
		removeWatches(t, w, 1, "/g", typ)
		settleFor(w, 10*time.Second)
		if err := v.Err(); err != nil {
			t.Fatalf("type %v: the view ended after another user of its session removed its watch on /g: %v", typ, err)
		}
		if _, err := sim.Run(w, 0, g.Join("b", nil)); err != nil {
			t.Fatal(err)
		}
		want := []string{"a", "b"}
		if !w.Settle(func() bool { return slices.Equal(v.Members(), want) }) || v.Err() != nil {
			t.Fatalf("type %v: the view has %v (Err %v), want %v", typ, v.Members(), v.Err(), want)
		}
	}
}

// "A missing directory has no members (the view waits for it to be
// created)": with exists and a watch. Another user of the view's session
// removes its watches on the missing directory: the view ended with
// task.ErrWatchRemoved. It reads again now, and reports the members once
// the directory is made.
func TestViewOfAMissingDirectoryOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	w := newTestWorld(t, 74, 2)
	g, _ := group.New("/g")
	var reports []group.Change
	v, err := sim.Run(w, 1, g.Watch(func(ch group.Change) { reports = append(reports, ch) }))
	if err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if len(reports) != 1 || len(reports[0].Members) != 0 {
		t.Fatalf("first reports of a missing directory: %+v", reports)
	}
	removeWatches(t, w, 1, "/g", task.WatcherAny)
	settleFor(w, 10*time.Second)
	if err := v.Err(); err != nil {
		t.Fatalf("the view ended after another user of its session removed its watch on the missing /g: %v", err)
	}
	if _, err := sim.Run(w, 0, g.Join("a", nil)); err != nil {
		t.Fatal(err)
	}
	want := []string{"a"}
	if !w.Settle(func() bool { return slices.Equal(v.Members(), want) }) || v.Err() != nil {
		t.Fatalf("the view has %v (Err %v), want %v", v.Members(), v.Err(), want)
	}
}

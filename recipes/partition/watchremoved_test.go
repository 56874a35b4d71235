package partition_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// A watch another user of the session takes away (RemoveWatches, as a
// recursive cache of the path stopping or a user's removeAllWatches does:
// ZooKeeper 3.8 cannot remove one watch alone) is no news about the
// party or an item: these tests remove, on a member's own session, the
// watches it has set on a path, and check that the member goes on as if
// nothing happened and still hears what comes next.

// settleFor drives w for d of simulated time.
func settleFor(w *sim.World, d time.Duration) {
	until := w.Clock.Now().Add(d)
	w.Settle(func() bool { return !w.Clock.Now().Before(until) })
}

// removeWatchesOf applies on client i's session a RemoveWatches of typ
// on path sent by another user of the session; the session must hold a
// watch there (else the test shows nothing).
func removeWatchesOf(t *testing.T, w *sim.World, i int, path string, typ task.WatcherType) {
	t.Helper()
	if !w.Server.RemoveWatchesNow(w.Conns[i], w.ServerPath(path), typ) {
		watched, _ := w.Server.WatchedPaths(w.Conns[i])
		t.Fatalf("client %d holds no watch on %s to remove (watched: %v)", i, path, watched)
	}
	w.Drive()
}

// partyNode is the party node of the member with identifier id (one).
func partyNode(t *testing.T, w *sim.World, p *partition.Partitioner, id string) string {
	t.Helper()
	var out []string
	for _, n := range memberNodes(w, p, id) {
		if strings.HasPrefix(n, p.Path()+"/party/") {
			out = append(out, n)
		}
	}
	if len(out) != 1 {
		t.Fatalf("party nodes of %s: %v, want one", id, out)
	}
	return out[0]
}

func holdsOf(hs []partition.Hold) string {
	var b strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&b, "%s@%d ", h.Item, h.Token)
	}
	return b.String()
}

// PROTOCOL.md, steps 1 and 2: the member watches its party node
// ("if it is gone, or not our session's, register again") and lists the
// party "again each time the watch fires"; a member ends only on an
// error no retry settles, on Leave, or on the session's end (which it
// outlives). Another user of m0's session removes its watches on its
// party node (the keeper's exists watch: type Data or Any) or on the
// party directory (the listing's child watch: type Children or Any).
// The member ended ("partition: /work party: zk watch ...: watch
// removed"), giving every item up though the party had not changed. It
// goes on now, holding what it held under the same tokens, and the
// watch is set again: an operator's delete of its party node makes it
// register anew, a member joining is heard and the items move.
func TestMemberOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	for _, c := range []struct {
		name string
		dir  bool // the party directory, else m0's party node
		typ  task.WatcherType
	}{
		{"party-node-data", false, task.WatcherData},
		{"party-node-any", false, task.WatcherAny},
		{"party-children", true, task.WatcherChildren},
		{"party-any", true, task.WatcherAny},
	} {
		t.Run(c.name, func(t *testing.T) { memberOutlivesWatchRemoved(t, c.dir, c.typ) })
	}
}

func memberOutlivesWatchRemoved(t *testing.T, dir bool, typ task.WatcherType) {
	w := newWorld(t, 71, 3)
	p := newSet(t)
	ms := []*partition.Member{join(t, w, p, 0), join(t, w, p, 1), nil}
	if !w.Settle(func() bool { return balanced(ms) }) {
		t.Fatalf("never balanced: m0 %v %v, m1 %v %v", ms[0].State(), heldItems(ms[0]), ms[1].State(), heldItems(ms[1]))
	}
	m0 := ms[0]
	before := m0.Held()
	node := partyNode(t, w, p, "m0")
	path := node
	if dir {
		path = p.Path() + "/party"
	}
	removeWatchesOf(t, w, 0, path, typ)
	settleFor(w, 4*stable)
	if err := m0.Err(); err != nil || m0.State() != partition.Acquired {
		t.Fatalf("m0 after another user of its session removed its watches on %s: state %v, Err %v", path, m0.State(), err)
	}
	if got := m0.Held(); holdsOf(got) != holdsOf(before) {
		t.Fatalf("m0's holds changed though nothing happened: %s, was %s", holdsOf(got), holdsOf(before))
	}
	if !dir {
		// The node is watched again: an operator's delete is heard.
		if _, err := sim.Run(w, 2, task.Delete(node, task.AnyVersion)); err != nil {
			t.Fatal(err)
		}
		if !w.Settle(func() bool {
			ns := memberNodes(w, p, "m0")
			return slices.ContainsFunc(ns, func(n string) bool { return strings.HasPrefix(n, p.Path()+"/party/") && n != node })
		}) {
			t.Fatalf("m0 never registered again after its party node %s was deleted: %v", node, memberNodes(w, p, "m0"))
		}
		if !w.Settle(func() bool { return balanced(ms) }) {
			t.Fatalf("not balanced again: m0 %v %v (Err %v)", m0.State(), heldItems(m0), m0.Err())
		}
		return
	}
	// The party is listed with a watch again: a join is heard.
	ms[2] = join(t, w, p, 2)
	if !w.Settle(func() bool { return balanced(ms) }) {
		t.Fatalf("the join of m2 unheard: m0 %v %v (Err %v), m2 %v %v", m0.State(), heldItems(m0), m0.Err(), ms[2].State(), heldItems(ms[2]))
	}
}

// The holds and the attempts wait on zkops (WatchNode, WaitChange), which
// take a removed watch for a wake-up; checked here at the member. Every
// item is given to both members (WithAssign): m0 holds each, m1 waits in
// each item's queue behind m0's node. Another user of each session
// removes the watches on m0's lock nodes: the holder's (WatchNode) and
// the waiter's (WaitChange on its predecessor). Nothing changes, and once
// m0 leaves, m1 holds every item.
func TestHoldsAndAttemptsOutliveAWatchRemovedByAnotherUser(t *testing.T) {
	w := newWorld(t, 72, 2)
	all := []string{"a", "b"}
	p, err := partition.New("/every", all, partition.WithStable(stable),
		partition.WithAssign(func(_ string, _, items []string) []string { return items }))
	if err != nil {
		t.Fatal(err)
	}
	m0 := join(t, w, p, 0)
	if !w.Settle(func() bool { return m0.State() == partition.Acquired && len(m0.Held()) == len(all) }) {
		t.Fatalf("m0 never held every item: %v %v", m0.State(), heldItems(m0))
	}
	m1 := join(t, w, p, 1)
	// m1 waits in every item's queue.
	if !w.Settle(func() bool {
		for _, it := range all {
			if n := memberNodes(w, p, "m1"); !slices.ContainsFunc(n, func(s string) bool { return strings.HasPrefix(s, p.ItemDir(it)+"/") }) {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("m1 never waited in every queue: %v", memberNodes(w, p, "m1"))
	}
	settleFor(w, stable)
	before := m0.Held()
	for _, h := range before {
		removeWatchesOf(t, w, 0, h.Path, task.WatcherAny)
		removeWatchesOf(t, w, 1, h.Path, task.WatcherAny)
	}
	settleFor(w, 4*stable)
	if m0.Err() != nil || m1.Err() != nil || holdsOf(m0.Held()) != holdsOf(before) || len(m1.Held()) != 0 {
		t.Fatalf("after the watches on m0's lock nodes were removed: m0 %s (Err %v), was %s; m1 %s (Err %v)",
			holdsOf(m0.Held()), m0.Err(), holdsOf(before), holdsOf(m1.Held()), m1.Err())
	}
	if _, err := sim.Run(w, 0, m0.Leave()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return m1.State() == partition.Acquired && len(m1.Held()) == len(all) }) {
		t.Fatalf("m1 never held every item after m0 left: %v %v (Err %v)", m1.State(), heldItems(m1), m1.Err())
	}
}

// The blocking face: Client.Wait returns the member's share, where it
// failed with the member's end ("partition: /bwork party: zk watch
// /bwork/party: watch removed") when another user of the session removed
// the party's watches while the member waited for a stable party.
func TestClientWaitOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	w := newWorld(t, 73, 1)
	cl, err := partition.NewClient(w.Execs[0], "/bwork", []string{"a", "b"}, partition.WithStable(stable))
	if err != nil {
		t.Fatal(err)
	}
	var (
		m          *partition.Member
		held       []partition.Hold
		jerr, werr error
		joined     bool
		done       bool
	)
	w.Go(0, func(a *sim.Actor) {
		m, jerr = cl.Join(a.Context(), "c0", nil)
		joined = true
		if jerr != nil {
			return
		}
		held, werr = cl.Wait(a.Context(), m)
		done = true
	})
	watched := func(path string) bool {
		paths, _ := w.Server.WatchedPaths(w.Conns[0])
		return slices.Contains(paths, w.ServerPath(path))
	}
	if !w.Settle(func() bool { return joined && (jerr != nil || watched("/bwork/party")) }) || jerr != nil {
		t.Fatalf("Join: done %v, err %v", joined, jerr)
	}
	if done {
		t.Fatalf("Wait returned before the party was stable: %v, %v", holdsOf(held), werr)
	}
	removeWatchesOf(t, w, 0, "/bwork/party", task.WatcherAny)
	if !w.Settle(func() bool { return done }) {
		t.Fatal("Wait never returned")
	}
	if werr != nil || len(held) != 2 {
		t.Fatalf("Wait after the party's watch was removed: %s, %v; want both items", holdsOf(held), werr)
	}
	var lerr error
	left := false
	w.Go(0, func(a *sim.Actor) { lerr = cl.Leave(a.Context(), m); left = true })
	if !w.Settle(func() bool { return left }) || lerr != nil {
		t.Fatalf("Leave: done %v, err %v", left, lerr)
	}
}

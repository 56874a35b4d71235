package zkops_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

func sessionID(t *testing.T, w *sim.World) int64 {
	t.Helper()
	id, err := sim.Run(w, 0, task.Task[int64](func(s *task.Scope, k task.Cont[int64]) { k(s.Session().ID, nil) }))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func req(prefix string) *task.CreateRequest {
	return &task.CreateRequest{Path: "/u/v/" + prefix, Mode: task.EphemeralSequential}
}

// A missing directory is created; the name returned is the node's.
func TestCreateUnique(t *testing.T) {
	w := world(t, 1, nil)
	name, err := sim.Run(w, 0, zkops.CreateUnique(req("_c_a-latch-"), "/u/v", nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Children("/u/v"); len(got) != 1 || got[0] != name || !strings.HasPrefix(name, "_c_a-latch-") {
		t.Errorf("name %q, children %v", name, got)
	}
	_, err = sim.Run(w, 0, zkops.CreateUnique(&task.CreateRequest{Path: "bad", Mode: task.EphemeralSequential}, "/u", nil, nil))
	if !errors.Is(err, task.ErrInvalidPath) {
		t.Errorf("CreateUnique(bad) = %v, want ErrInvalidPath", err)
	}
}

// A lost create reply, applied or not: with a settle, exactly one node and
// its name; without one (a blind retry), an applied create leaves an orphan.
func TestCreateUniqueLostReply(t *testing.T) {
	for _, blind := range []bool{false, true} {
		for _, applied := range []bool{false, true} {
			d := &dropper{applied: applied, match: isCreate, dropped: 1}
			w := world(t, 1, d)
			if _, err := sim.Run(w, 0, zkops.EnsurePath("/u/v", nil)); err != nil {
				t.Fatal(err)
			}
			id := sessionID(t, w)
			settled := 0
			settle := func() task.Task[[]string] {
				settled++
				if blind {
					return nil
				}
				return task.Task[[]string](func(s *task.Scope, k task.Cont[[]string]) {
					task.Run(s, zkops.Owned("/u/v", "_c_a-", id), func(m []zkops.Match, err error) { k(zkops.Names(m), err) })
				})
			}
			d.dropped = 0
			name, err := sim.Run(w, 0, zkops.CreateUnique(req("_c_a-latch-"), "/u/v", nil, settle))
			if err != nil {
				t.Fatalf("blind=%v applied=%v: %v", blind, applied, err)
			}
			got := w.Children("/u/v")
			want := 1
			if blind && applied {
				want = 2
			}
			if d.dropped != 1 || settled != 1 || len(got) != want || got[len(got)-1] != name {
				t.Errorf("blind=%v applied=%v: dropped %d, settled %d, name %q, children %v (want %d)",
					blind, applied, d.dropped, settled, name, got, want)
			}
		}
	}
}

// An error of the settle ends the task with it.
func TestCreateUniqueSettleError(t *testing.T) {
	d := &dropper{applied: true, match: isCreate, dropped: 1}
	w := world(t, 1, d)
	if _, err := sim.Run(w, 0, zkops.EnsurePath("/u/v", nil)); err != nil {
		t.Fatal(err)
	}
	d.dropped = 0
	boom := errors.New("boom")
	_, err := sim.Run(w, 0, zkops.CreateUnique(req("_c_a-"), "/u/v", nil, func() task.Task[[]string] { return task.Fail[[]string](boom) }))
	if !errors.Is(err, boom) {
		t.Errorf("CreateUnique = %v, want the settle's error", err)
	}
}

// Prefixed's doc: the listing follows a sync. The create's reply is lost
// with the create applied, and the session comes back through a member
// that has applied only what the client saw (ZooKeeper's handshake lets
// it): a listing there misses the node. The settle must still find it,
// and leave one node, not create a second one queued behind the first.
// On the code before (a plain listing) the attempt made a second node.
func TestCreateUniqueLostReplyLaggingMember(t *testing.T) {
	d := &dropper{applied: true, match: isCreate, dropped: 1, lag: time.Minute}
	w := world(t, 1, d)
	w.Server.KeepHistory()
	if _, err := sim.Run(w, 0, zkops.EnsurePath("/u/v", nil)); err != nil {
		t.Fatal(err)
	}
	id := sessionID(t, w)
	settle := func() task.Task[[]string] { return c.Map(zkops.Owned("/u/v", "_c_a-", id), zkops.Names) }
	d.dropped = 0
	name, err := sim.Run(w, 0, zkops.CreateUnique(req("_c_a-latch-"), "/u/v", nil, settle))
	if err != nil {
		t.Fatal(err)
	}
	if lagging, _ := w.Conns[0].Lagging(); !lagging {
		t.Fatal("the session came back through a member that does not lag: the test shows nothing")
	}
	if got := w.Children("/u/v"); d.dropped != 1 || len(got) != 1 || got[0] != name {
		t.Errorf("dropped %d, name %q, children %v: want the one node the lost create made", d.dropped, name, got)
	}
}

// DeleteOwned's doc: its reads follow a sync. A failed Join's cleanup
// deletes the node its create may have made: the create's reply was lost
// with the create applied, and the session came back through a member
// that has not applied it. The node must go. On the code before (a plain
// exists) the cleanup took the node for gone and left it for the
// session's life.
func TestDeleteOwnedAfterLostCreateLaggingMember(t *testing.T) {
	d := &dropper{applied: true, match: isCreate, dropped: 1, lag: time.Minute}
	w := world(t, 1, d)
	w.Server.KeepHistory()
	if _, err := sim.Run(w, 0, zkops.EnsurePath("/u", nil)); err != nil {
		t.Fatal(err)
	}
	id := sessionID(t, w)
	d.dropped = 0
	if _, err := sim.Run(w, 0, task.Create("/u/x", nil, task.Ephemeral)); !errors.Is(err, task.ErrConnectionLoss) {
		t.Fatalf("create whose reply was dropped: %v, want connection loss", err)
	}
	if _, ok := w.NodeStat("/u/x"); !ok {
		t.Fatal("the dropped create was not applied")
	}
	if _, err := sim.Run(w, 0, zkops.DeleteOwned("/u/x", id)); err != nil {
		t.Fatal(err)
	}
	if lagging, _ := w.Conns[0].Lagging(); !lagging {
		t.Fatal("the session came back through a member that does not lag: the test shows nothing")
	}
	if _, ok := w.NodeStat("/u/x"); ok {
		t.Fatal("the node the lost create made is still there")
	}
}

// DeleteNode's doc: after a lost reply it deletes only the incarnation it
// was given, never a node created at the path since. Its delete is
// applied and the reply lost; another node is made at the path (version
// 0, as the first was); the session comes back through a member that has
// not applied the delete. The read sent again must not take the node it
// shows there, ours, for the one at the path: the new node must stay. On
// the code before (a plain exists after the lost reply) the delete sent
// again at version 0 took the new node; the canary
// zkops/no-sync-after-lost-delete puts that read back, and the new node
// must then go. Not parallel: canaries are process-wide.
func TestDeleteNodeAfterLostDeleteLaggingMember(t *testing.T) {
	for _, bug := range []bool{false, true} {
		t.Run(fmt.Sprintf("bug=%v", bug), func(t *testing.T) {
			if bug {
				defer canary.Enable(zkops.BugNoSyncAfterLostDelete)()
			}
			deleteNodeAfterLostDelete(t, bug)
		})
	}
}

func deleteNodeAfterLostDelete(t *testing.T, bug bool) {
	d := &dropper{applied: true, match: isDelete, dropped: 1, lag: time.Minute}
	w := world(t, 1, d)
	w.Server.KeepHistory()
	if _, err := sim.Run(w, 0, zkops.EnsurePath("/u", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, task.Create("/u/x", nil, task.Ephemeral)); err != nil {
		t.Fatal(err)
	}
	st, err := sim.Run(w, 0, task.Exists("/u/x"))
	if err != nil || st == nil {
		t.Fatal(st, err)
	}
	remade := false
	d.after = func() {
		if _, ok := w.NodeStat("/u/x"); ok {
			t.Error("the dropped delete was not applied")
			return
		}
		if err := w.Server.AdminCreate(w.ServerPath("/u/x"), []byte("theirs"), 0); err != nil {
			t.Error(err)
			return
		}
		remade = true
	}
	d.dropped = 0
	if _, err := sim.Run(w, 0, zkops.DeleteNode("/u/x", *st)); err != nil {
		t.Fatal(err)
	}
	if !remade {
		t.Fatal("no node was made at the path while the session was away: the test shows nothing")
	}
	if lagging, _ := w.Conns[0].Lagging(); !lagging {
		t.Fatal("the session came back through a member that does not lag: the test shows nothing")
	}
	if _, ok := w.NodeStat("/u/x"); ok == bug {
		t.Fatalf("canary %v: the node made at the path after our delete is there: %v", bug, ok)
	}
}

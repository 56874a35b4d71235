package group_test

import (
	"errors"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/group"
	"github.com/zkflow/zkflow/task"
)

// A Join that fails after its create was applied (its deadline passed
// while the connection was cut) has its node deleted by its cleanup; an
// operator's ACL refuses that delete, which goes on in the background.
// The next Join of the id on the session waits until the node is gone:
// the cleanup stays counted until then (zkops.UntilAllowed). Its create's
// reply lost, the next Join would otherwise find the failed Join's node,
// of its own session, take it for the one its create made, and lose it to
// the background delete once the ACL let it (group/shared-id seed
// 111782865875062: the member's node deleted while it was not leaving).
func TestJoinWaitsForARefusedCleanup(t *testing.T) {
	const dir, path = "/g", "/g/a"
	drop := &dropNextCreate{}
	w, g := joinWorld(t, dir, func(conn *fakezk.Conn) task.Conn {
		drop.Conn = conn
		return drop
	})
	first := sim.Submit(w, 0, c.Timeout(g.Join("a", []byte("a")), time.Second))
	w.Execs[0].RunUntilIdle() // the create is sent
	w.Server.Partition(w.Conns[0], 2*time.Second, true)
	if !w.Settle(func() bool { return first.Done }) || !errors.Is(first.Err, task.ErrDeadlineExceeded) {
		t.Fatalf("first Join: %+v, want its deadline", first)
	}
	made, ok := w.Server.NodeStat(path)
	if !ok || made.EphemeralOwner != w.Conns[0].SessionID() {
		t.Fatalf("the first Join's create was not applied (%v %+v): the test shows nothing", ok, made)
	}
	readOnly := []task.ACL{{Perms: task.PermRead, Scheme: "world", ID: "anyone"}}
	if err := w.Server.AdminSetACL(dir, readOnly); err != nil {
		t.Fatal(err)
	}
	// The cleanup runs once the partition heals; its delete is refused.
	w.Settle(func() bool { return w.Clock.Now().Sub(fakezk.Epoch) > 3*time.Second })
	if _, ok := w.Server.NodeStat(path); !ok {
		t.Fatal("the failed Join's node went before the ACL let it")
	}
	drop.armed = true
	second := sim.Submit(w, 0, g.Join("a", []byte("a")))
	until := w.Clock.Now().Add(3 * w.Timeout())
	w.Settle(func() bool { return second.Done || !w.Clock.Now().Before(until) })
	if second.Done {
		st, _ := w.Server.NodeStat(path)
		t.Fatalf("second Join ended (%v) while the ACL refused the failed Join's cleanup, the node at %s being czxid %#x (the failed Join's %#x)", second.Err, path, st.Czxid, made.Czxid)
	}
	if err := w.Server.AdminSetACL(dir, task.OpenACL); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return second.Done }) || second.Err != nil {
		t.Fatalf("second Join: %+v", second)
	}
	joined, ok := w.Server.NodeStat(path)
	if !ok || joined.Czxid == made.Czxid || joined.EphemeralOwner != w.Conns[0].SessionID() {
		t.Fatalf("after the second Join: node %v %+v, want a node of its own (the failed Join's was czxid %#x)", ok, joined, made.Czxid)
	}
	w.Settle(func() bool { return w.Clock.Now().Sub(fakezk.Epoch) > time.Minute })
	if st, ok := w.Server.NodeStat(path); !ok || st.Czxid != joined.Czxid {
		t.Fatalf("the second Join's node (czxid %#x) did not stay: now %v %+v", joined.Czxid, ok, st)
	}
}

// dropNextCreate cuts its connection just after the first create sent
// once armed, the create not applied.
type dropNextCreate struct {
	*fakezk.Conn
	armed bool
}

func (c *dropNextCreate) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.Conn.Do(req, done, watch)
	if _, ok := req.(*task.CreateRequest); ok && c.armed {
		c.armed = false
		c.Server().Drop(c.Conn, false)
	}
}

// joinWorld returns a world of one client, its connection wrapped by
// wrap, with the group's directory dir made.
func joinWorld(t *testing.T, dir string, wrap func(*fakezk.Conn) task.Conn) (*sim.World, *group.Group) {
	t.Helper()
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1, Wrap: func(_ int, conn *fakezk.Conn) task.Conn { return wrap(conn) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	if _, err := sim.Run(w, 0, task.Create(dir, nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	g, err := group.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return w, g
}

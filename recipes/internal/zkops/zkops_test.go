package zkops_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// dropper drops client 0's connection once, just after it sends the first
// request of kind T, with the request applied or not: the lost reply a
// retry must settle.
type dropper struct {
	w       *sim.World
	applied bool
	match   func(task.Request) bool
	dropped int
	// cut, if set, cuts the client off for that long instead of dropping
	// its connection: its session lives on while others act.
	cut time.Duration
	// lag, if set, has the session come back through a member that has
	// not applied the dropped request (Server.LagAtReconnect, held).
	lag time.Duration
	// after, if set, runs once the connection is dropped or cut: what
	// others do before the session is back.
	after func()
}

type dropConn struct {
	*fakezk.Conn
	d *dropper
}

func (c *dropConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.Conn.Do(req, done, watch)
	if c.d.w != nil && c.d.dropped == 0 && c.d.match(req) {
		c.d.dropped++
		if c.d.lag > 0 {
			c.d.w.Server.LagAtReconnect(c.Conn, c.d.lag, true)
		}
		if c.d.cut > 0 {
			c.d.w.Server.Partition(c.Conn, c.d.cut, c.d.applied)
		} else {
			c.d.w.Server.Drop(c.Conn, c.d.applied)
		}
		if c.d.after != nil {
			c.d.after()
		}
	}
}

func world(t *testing.T, clients int, d *dropper) *sim.World {
	t.Helper()
	cfg := sim.Config{Seed: 1, Clients: clients}
	if d != nil {
		cfg.Wrap = func(i int, conn *fakezk.Conn) task.Conn {
			if i == 0 {
				return &dropConn{Conn: conn, d: d}
			}
			return conn
		}
	}
	w, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	if d != nil {
		d.w = w
	}
	return w
}

func isCreate(r task.Request) bool { _, ok := r.(*task.CreateRequest); return ok }
func isDelete(r task.Request) bool { _, ok := r.(*task.DeleteRequest); return ok }

func exists(t *testing.T, w *sim.World, p string) bool {
	t.Helper()
	st, err := sim.Run(w, 0, task.Exists(p))
	if err != nil {
		t.Fatalf("exists %s: %v", p, err)
	}
	return st != nil
}

func TestEnsurePath(t *testing.T) {
	w := world(t, 1, nil)
	for range 2 { // the second time every node is there already
		if _, err := sim.Run(w, 0, zkops.EnsurePath("/a/b/c", nil)); err != nil {
			t.Fatalf("EnsurePath: %v", err)
		}
	}
	for _, p := range []string{"/a", "/a/b", "/a/b/c"} {
		if !exists(t, w, p) {
			t.Errorf("%s missing", p)
		}
	}
	if got := w.Children("/a/b/c"); len(got) != 0 {
		t.Errorf("children of /a/b/c: %v", got)
	}
	for _, p := range []string{"/", ""} {
		if _, err := sim.Run(w, 0, zkops.EnsurePath(p, nil)); err != nil {
			t.Errorf("EnsurePath(%q): %v", p, err)
		}
	}
}

func TestEnsurePathBadInput(t *testing.T) {
	w := world(t, 1, nil)
	for _, p := range []string{"a/b", "/a//b", "/a/"} {
		_, err := sim.Run(w, 0, zkops.EnsurePath(p, nil))
		if !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("EnsurePath(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
}

func TestEnsurePathLostReply(t *testing.T) {
	for _, applied := range []bool{false, true} {
		d := &dropper{applied: applied, match: isCreate}
		w := world(t, 1, d)
		if _, err := sim.Run(w, 0, zkops.EnsurePath("/x/y", nil)); err != nil {
			t.Fatalf("applied=%v: EnsurePath: %v", applied, err)
		}
		if d.dropped != 1 {
			t.Fatalf("applied=%v: dropped %d times, want 1", applied, d.dropped)
		}
		if !exists(t, w, "/x") || !exists(t, w, "/x/y") {
			t.Errorf("applied=%v: path not created", applied)
		}
	}
}

func TestDelete(t *testing.T) {
	w := world(t, 1, nil)
	if _, err := sim.Run(w, 0, zkops.EnsurePath("/d/e", nil)); err != nil {
		t.Fatal(err)
	}
	// A node with children is an error the cleanup reports.
	if _, err := sim.Run(w, 0, zkops.Delete("/d")); !errors.Is(err, task.ErrNotEmpty) {
		t.Errorf("Delete of a parent = %v, want ErrNotEmpty", err)
	}
	if _, err := sim.Run(w, 0, zkops.Delete("/d/e")); err != nil {
		t.Errorf("Delete: %v", err)
	}
	if exists(t, w, "/d/e") {
		t.Error("/d/e still there")
	}
	// Gone already is success.
	if _, err := sim.Run(w, 0, zkops.Delete("/d/e")); err != nil {
		t.Errorf("Delete of a missing node: %v", err)
	}
	if _, err := sim.Run(w, 0, zkops.Delete("bad")); !errors.Is(err, task.ErrInvalidPath) {
		t.Errorf("Delete(bad) = %v, want ErrInvalidPath", err)
	}
}

func TestDeleteLostReply(t *testing.T) {
	for _, applied := range []bool{false, true} {
		d := &dropper{applied: applied, match: isDelete}
		w := world(t, 1, d)
		if _, err := sim.Run(w, 0, task.Create("/n", nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
		if _, err := sim.Run(w, 0, zkops.Delete("/n")); err != nil {
			t.Fatalf("applied=%v: Delete: %v", applied, err)
		}
		if d.dropped != 1 {
			t.Fatalf("applied=%v: dropped %d times, want 1", applied, d.dropped)
		}
		if exists(t, w, "/n") {
			t.Errorf("applied=%v: /n still there", applied)
		}
	}
}

func TestDeleteOwned(t *testing.T) {
	w := world(t, 2, nil)
	if _, err := sim.Run(w, 0, task.Create("/mine", nil, task.Ephemeral)); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 1, task.Create("/theirs", nil, task.Ephemeral)); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, task.Create("/plain", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	owner, err := sim.Run(w, 0, task.Task[int64](func(s *task.Scope, k task.Cont[int64]) { k(s.Session().ID, nil) }))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/mine", "/theirs", "/plain", "/missing"} {
		if _, err := sim.Run(w, 0, zkops.DeleteOwned(p, owner)); err != nil {
			t.Errorf("DeleteOwned(%s): %v", p, err)
		}
	}
	for p, want := range map[string]bool{"/mine": false, "/theirs": true, "/plain": true} {
		if got := exists(t, w, p); got != want {
			t.Errorf("%s there: %v, want %v", p, got, want)
		}
	}
}

// A delete whose reply is lost is applied; while the client is cut off,
// another session creates a node at the same path. The retry must leave
// that node alone: a version on a fixed path does not identify a node.
func TestDeleteOwnedLostReplyLeavesNextIncarnation(t *testing.T) {
	for _, pinned := range []bool{false, true} {
		d := &dropper{applied: true, match: isDelete, cut: 500 * time.Millisecond}
		w := world(t, 2, d)
		if _, err := sim.Run(w, 0, task.Create("/m", nil, task.Ephemeral)); err != nil {
			t.Fatal(err)
		}
		st, err := sim.Run(w, 0, task.Exists("/m"))
		if err != nil || st == nil {
			t.Fatalf("exists /m: %v, %v", st, err)
		}
		del := zkops.DeleteOwned("/m", st.EphemeralOwner)
		if pinned {
			del = zkops.DeleteNode("/m", *st)
		}
		o := sim.Submit(w, 0, del)
		if !w.Settle(func() bool { return d.dropped > 0 }) {
			t.Fatal("the delete was never sent")
		}
		if _, err := sim.Run(w, 1, task.Create("/m", nil, task.Ephemeral)); err != nil {
			t.Fatalf("client 1 creates /m while client 0 is cut off: %v", err)
		}
		if !w.Settle(func() bool { return o.Done }) {
			t.Fatal("the delete never ended")
		}
		if o.Err != nil {
			t.Errorf("pinned=%v: delete: %v", pinned, o.Err)
		}
		st1, err := sim.Run(w, 1, task.Exists("/m"))
		if err != nil {
			t.Fatal(err)
		}
		if st1 == nil {
			t.Errorf("pinned=%v: the retried delete removed the node another session created after ours was deleted", pinned)
		}
	}
}

func TestPrefixedAndOwned(t *testing.T) {
	w := world(t, 2, nil)
	// Missing directory: none, no error.
	if got, err := sim.Run(w, 0, zkops.Owned("/q", "_c_a-", 1)); err != nil || len(got) != 0 {
		t.Fatalf("Owned on a missing dir = %v, %v", got, err)
	}
	if got, err := sim.Run(w, 0, zkops.Prefixed("/q", "_c_a-")); err != nil || len(got) != 0 {
		t.Fatalf("Prefixed on a missing dir = %v, %v", got, err)
	}
	if _, err := sim.Run(w, 0, zkops.EnsurePath("/q", nil)); err != nil {
		t.Fatal(err)
	}
	mk := func(i int, prefix string) string {
		p, err := sim.Run(w, i, task.Create("/q/"+prefix, nil, task.EphemeralSequential))
		if err != nil {
			t.Fatal(err)
		}
		return task.Base(p)
	}
	mine := mk(0, "_c_a-lock-")
	theirs := mk(1, "_c_a-lock-") // same prefix, another session
	mk(0, "_c_b-lock-")           // our session, another prefix
	if got, err := sim.Run(w, 0, zkops.Prefixed("/q", "_c_a-")); err != nil || len(got) != 2 {
		t.Errorf("Prefixed = %v, %v; want %s and %s", got, err, mine, theirs)
	}
	owner, err := sim.Run(w, 0, task.Task[int64](func(s *task.Scope, k task.Cont[int64]) { k(s.Session().ID, nil) }))
	if err != nil {
		t.Fatal(err)
	}
	got, err := sim.Run(w, 0, zkops.Owned("/q", "_c_a-", owner))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != mine || got[0].Stat.EphemeralOwner != owner {
		t.Fatalf("Owned = %+v, want only %s", got, mine)
	}
	if names := zkops.Names(got); len(names) != 1 || names[0] != mine {
		t.Errorf("Names = %v", names)
	}
	if _, err := sim.Run(w, 0, zkops.Owned("bad", "x", owner)); !errors.Is(err, task.ErrInvalidPath) {
		t.Errorf("Owned(bad) = %v, want ErrInvalidPath", err)
	}
}

// A create whose reply is lost is settled by Owned: it finds the node if
// and only if the create was applied.
func TestOwnedSettlesLostCreate(t *testing.T) {
	for _, applied := range []bool{false, true} {
		d := &dropper{applied: applied, match: isCreate, dropped: 1} // off until reset
		w := world(t, 1, d)
		if _, err := sim.Run(w, 0, task.Create("/q", nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
		d.dropped = 0 // the next create is the one to lose
		_, err := sim.Run(w, 0, task.Create("/q/_c_x-latch-", nil, task.EphemeralSequential))
		if !errors.Is(err, task.ErrConnectionLoss) {
			t.Fatalf("applied=%v: create = %v, want connection loss", applied, err)
		}
		owner, err := sim.Run(w, 0, task.Task[int64](func(s *task.Scope, k task.Cont[int64]) { k(s.Session().ID, nil) }))
		if err != nil {
			t.Fatal(err)
		}
		got, err := sim.Run(w, 0, zkops.Owned("/q", "_c_x-", owner))
		if err != nil {
			t.Fatal(err)
		}
		if applied != (len(got) == 1) || len(got) > 1 {
			t.Errorf("applied=%v: Owned = %+v", applied, got)
		}
	}
}

// DeleteNode deletes the incarnation its stat names and no other: a
// persistent node deleted and created again at the same path (the same
// owner, 0, and version 0 again) is another node and is left alone.
func TestDeleteNodeOnlyItsIncarnation(t *testing.T) {
	w := world(t, 1, nil)
	create := func() task.Stat {
		t.Helper()
		if _, err := sim.Run(w, 0, task.Create("/p", nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
		st, err := sim.Run(w, 0, task.Exists("/p"))
		if err != nil || st == nil {
			t.Fatalf("exists /p: %v, %v", st, err)
		}
		return *st
	}
	first := create()
	if _, err := sim.Run(w, 0, zkops.Delete("/p")); err != nil {
		t.Fatal(err)
	}
	second := create()
	if _, err := sim.Run(w, 0, zkops.DeleteNode("/p", first)); err != nil {
		t.Fatalf("DeleteNode of a gone incarnation: %v", err)
	}
	if !exists(t, w, "/p") {
		t.Fatal("DeleteNode deleted the node created after the one it named")
	}
	if _, err := sim.Run(w, 0, zkops.DeleteNode("/p", second)); err != nil {
		t.Fatalf("DeleteNode: %v", err)
	}
	if exists(t, w, "/p") {
		t.Fatal("DeleteNode left the incarnation it named")
	}
}

package zkops_test

import (
	"errors"
	"testing"

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
}

type dropConn struct {
	*fakezk.Conn
	d *dropper
}

func (c *dropConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.Conn.Do(req, done, watch)
	if c.d.w != nil && c.d.dropped == 0 && c.d.match(req) {
		c.d.dropped++
		c.d.w.Server.Drop(c.Conn, c.d.applied)
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
		if _, err := sim.Run(w, 0, zkops.EnsurePath("/a/b/c")); err != nil {
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
		if _, err := sim.Run(w, 0, zkops.EnsurePath(p)); err != nil {
			t.Errorf("EnsurePath(%q): %v", p, err)
		}
	}
}

func TestEnsurePathBadInput(t *testing.T) {
	w := world(t, 1, nil)
	for _, p := range []string{"a/b", "/a//b", "/a/"} {
		_, err := sim.Run(w, 0, zkops.EnsurePath(p))
		if !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("EnsurePath(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
}

func TestEnsurePathLostReply(t *testing.T) {
	for _, applied := range []bool{false, true} {
		d := &dropper{applied: applied, match: isCreate}
		w := world(t, 1, d)
		if _, err := sim.Run(w, 0, zkops.EnsurePath("/x/y")); err != nil {
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
	if _, err := sim.Run(w, 0, zkops.EnsurePath("/d/e")); err != nil {
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

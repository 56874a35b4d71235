package partition_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// Hold.Fenced's doc: "ZooKeeper refuses it (an error wrapping ErrLost)
// once the hold has ended, however late it arrives." The fence is the
// lock node's path and version, which names a path, not an incarnation:
// an operator deletes member A's lock node (A's hold ends, B takes the
// item) and then makes a node at that path again (a restore, a mistaken
// re-create: DESIGN.md's operator fault class). A's late write through
// its ended hold is then applied while B holds the item.
func TestAdvFenceSurvivesRecreatedLockNode(t *testing.T) {
	w := newWorld(t, 1, 2)
	both := func(string, []string, []string) []string { return []string{"x"} }
	p, err := partition.New("/fence", []string{"x"}, partition.WithStable(stable), partition.WithAssign(both))
	if err != nil {
		t.Fatal(err)
	}
	a, b := join(t, w, p, 0), join(t, w, p, 1)
	var first, second *partition.Member
	if !w.Settle(func() bool {
		_, ha := a.Hold("x")
		_, hb := b.Hold("x")
		return ha || hb
	}) {
		t.Fatal("nobody holds x")
	}
	first, second = a, b
	if _, ok := b.Hold("x"); ok {
		first, second = b, a
	}
	old, _ := first.Hold("x")
	if err := w.Server.AdminDelete(w.ServerPath(old.Path)); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { _, ok := second.Hold("x"); return ok }) {
		t.Fatal("the second member never took x")
	}
	if _, ok := first.Hold("x"); ok {
		t.Fatal("the first member still reports x held")
	}
	// The operator makes the old node again, at version 0 as before.
	if err := w.Server.AdminCreate(w.ServerPath(old.Path), []byte("restored"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 1, task.Create("/fence-data", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	i := 0
	if first == b {
		i = 1
	}
	_, err = sim.Run(w, i, old.Fenced(task.SetOp("/fence-data", []byte("late"), task.AnyVersion)))
	if !errors.Is(err, partition.ErrLost) {
		data, _, _ := w.NodeData("/fence-data")
		t.Fatalf("a late write through an ended hold (node deleted, item taken by the other member) = %v, data now %q; want ErrLost", err, data)
	}
}

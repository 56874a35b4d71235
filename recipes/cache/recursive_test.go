package cache

import (
	"errors"
	"slices"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// TestTree's scenario in the recursive mode, which then removes its watch
// at Stop: the session holds no watch on the root afterwards. Recursive is
// refused by the other caches.
func TestTreeRecursive(t *testing.T) {
	w := newWorld(t, 2)
	tc := must(NewTree("/t", WithData(), WithRecursive()))
	must(sim.Run(w, 0, tc.Start()))
	if got := tc.Current(); len(got) != 0 {
		t.Fatalf("missing root: cached %v", paths(got))
	}
	mk := func(p, data string) task.Task[task.Unit] {
		return c.Map(task.Create(p, []byte(data), task.Persistent), func(string) task.Unit { return task.Unit{} })
	}
	must(sim.Run(w, 1, c.Seq(mk("/t", ""), c.Seq(mk("/t/a", "1"), c.Seq(mk("/t/a/b", "2"), mk("/t/c", "3"))))))
	w.Settle(func() bool { return len(tc.Current()) == 4 })
	ch := must(sim.Run(w, 0, tc.Next()))
	if want := []string{"/t", "/t/a", "/t/a/b", "/t/c"}; !slices.Equal(paths(ch.Nodes), want) {
		t.Fatalf("tree %v, want %v", paths(ch.Nodes), want)
	}
	must(sim.Run(w, 1, c.Seq(task.Delete("/t/a/b", -1), c.Seq(task.Delete("/t/a", -1), mk("/t/c/d", "4")))))
	w.Settle(func() bool { return len(tc.Current()) == 3 })
	ch = must(sim.Run(w, 0, tc.Next()))
	if !slices.Equal(paths(ch.Removed), []string{"/t/a", "/t/a/b"}) || !slices.Equal(paths(ch.Added), []string{"/t/c/d"}) {
		t.Fatalf("removed %v added %v; want removed [/t/a /t/a/b], added [/t/c/d]", paths(ch.Removed), paths(ch.Added))
	}
	if d := ch.Added[0].Data; string(d) != "4" {
		t.Fatalf("data %q", d)
	}
	must(sim.Run(w, 0, tc.Stop()))
	w.Drive()
	if _, err := sim.Run(w, 0, task.RemoveWatches("/t", task.WatcherAny)); !errors.Is(err, task.CodeNoWatcher) {
		t.Fatalf("RemoveWatches after Stop: %v, want NoWatcher (Stop removes the watch)", err)
	}
	if _, err := NewChildren("/t", WithRecursive()); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("NewChildren with Recursive: %v", err)
	}
	if _, err := NewNode("/t", WithRecursive()); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("NewNode with Recursive: %v", err)
	}
}

// Two recursive caches of one root on one session: stopping one removes
// the session's watch on the root (RemoveWatches of type Any); the other
// sets it again, walks, and goes on following the tree.
func TestTreeRecursiveSharedRoot(t *testing.T) {
	w := newWorld(t, 2)
	must(sim.Run(w, 1, task.Create("/t", nil, task.Persistent)))
	a := must(NewTree("/t", WithRecursive()))
	b := must(NewTree("/t", WithRecursive()))
	must(sim.Run(w, 0, a.Start()))
	must(sim.Run(w, 0, b.Start()))
	must(sim.Run(w, 0, a.Stop()))
	w.Drive()
	must(sim.Run(w, 1, task.Create("/t/x", nil, task.Persistent)))
	if !w.Settle(func() bool { return len(b.Current()) == 2 }) {
		t.Fatalf("the cache left running holds %v, want /t and /t/x", paths(b.Current()))
	}
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
}

package task

import (
	"errors"
	"slices"
	"testing"
)

// A Wait abandoned by its scope (canceled, past a deadline) leaves the
// Watch: a long-lived watch that many canceled waits have waited on holds
// none of them, and firing it resumes only the waits still there.
func TestWatchWaitAbandonedLeaves(t *testing.T) {
	_, root := newStubRoot()
	w := &Watch{path: "/w"}
	var ended []error
	for range 1000 {
		c := root.Child()
		Run(c, w.Wait(), func(_ Event, err error) { ended = append(ended, err) })
		c.Cancel(ErrCanceled)
		c.Close()
	}
	if len(w.waiters) != 0 || w.first != nil {
		t.Fatalf("%d waiters (and first %v) left on the watch after 1000 canceled waits", len(w.waiters), w.first)
	}
	kept := root.Child()
	var got Event
	Run(kept, w.Wait(), func(ev Event, err error) { got = ev })
	w.fire(Event{Type: EventNodeDeleted, Path: "/w"})
	if got.Type != EventNodeDeleted {
		t.Fatalf("the wait still there got %v", got)
	}
	if len(ended) != 1000 || !errors.Is(ended[0], ErrCanceled) {
		t.Fatalf("%d canceled waits ended (first: %v)", len(ended), ended[0])
	}
}

// A Wait that the watch resumes costs one allocation (the task) besides
// the Watch: the wait's record is the Watch's own slot, both the scope's
// wait and what the Watch fires, and a watch's first wait needs no list.
// Counted in plain builds only (Run's check that k is called once, and
// the race detector's instrumentation, add their own).
func TestWatchWaitAllocs(t *testing.T) {
	_, root := newStubRoot()
	var got int
	k := func(ev Event, err error) {
		if err == nil && ev.Type == EventNodeDeleted {
			got++
		}
	}
	n := testing.AllocsPerRun(100, func() {
		w := &Watch{path: "/w"}
		Run(root, w.Wait(), k)
		w.fire(Event{Type: EventNodeDeleted, Path: "/w"})
	})
	if n > 2 && !invariants {
		t.Errorf("a wait fired: %v allocations, want at most 2 (the Watch, the task)", n)
	}
	if got != 101 {
		t.Errorf("%d waits resumed, want 101", got)
	}
	if root.waits.head != nil {
		t.Error("a fired wait is still linked in its scope")
	}
}

// Waits are resumed in the order they came, whether they sit in the
// first slot or in the list, and one that leaves is not resumed.
func TestWatchWaitOrder(t *testing.T) {
	_, root := newStubRoot()
	w := &Watch{path: "/w"}
	var order []int
	scopes := make([]*Scope, 5)
	for i := range scopes {
		scopes[i] = root.Child()
		Run(scopes[i], w.Wait(), func(_ Event, err error) {
			if err == nil {
				order = append(order, i)
			}
		})
	}
	scopes[0].Cancel(ErrCanceled) // the first slot's wait leaves
	scopes[2].Cancel(ErrCanceled)
	c := root.Child()
	Run(c, w.Wait(), func(_ Event, err error) { order = append(order, 5) })
	w.fire(Event{Type: EventNodeDeleted, Path: "/w"})
	if want := []int{1, 3, 4, 5}; !slices.Equal(order, want) {
		t.Fatalf("resumed %v, want %v", order, want)
	}
}

package task

import (
	"errors"
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
	if len(w.waiters) != 0 {
		t.Fatalf("%d waiters left on the watch after 1000 canceled waits", len(w.waiters))
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

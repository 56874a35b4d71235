package task

import (
	"errors"
	"testing"
)

// The stream keeps every event in order for a reader that is not waiting,
// hands the next one to a waiting reader, takes nothing for a Next its
// scope abandoned, refuses a second concurrent Next, and after its end
// fails every Next with the end's error, dropping whatever the Conn
// (wrongly) calls after it.
func TestPersistentWatchStream(t *testing.T) {
	_, root := newStubRoot()
	w := &PersistentWatch{path: "/p", mode: WatchPersistentRecursive}
	ev := func(typ EventType, p string) Event { return Event{Type: typ, State: StateConnected, Path: p} }
	w.deliver(ev(EventNodeCreated, "/p/a"))
	w.deliver(Event{Type: EventNone, State: StateSuspended})
	w.deliver(ev(EventNodeDeleted, "/p/a"))
	var got []Event
	next := func(s *Scope) (err error) {
		Run(s, w.Next(), func(e Event, e2 error) { got, err = append(got, e), e2 })
		return err
	}
	for range 3 {
		if err := next(root); err != nil {
			t.Fatal(err)
		}
	}
	want := []EventType{EventNodeCreated, EventNone, EventNodeDeleted}
	for i, typ := range want {
		if got[i].Type != typ {
			t.Fatalf("event %d = %v, want %s", i, got[i], typ)
		}
	}
	if w.Pending() != 0 {
		t.Fatalf("pending %d", w.Pending())
	}

	// A Next abandoned by its scope takes nothing.
	c := root.Child()
	var abandoned error
	Run(c, w.Next(), func(_ Event, err error) { abandoned = err })
	c.Cancel(ErrCanceled)
	c.Close()
	if !errors.Is(abandoned, ErrCanceled) || w.waiter != nil {
		t.Fatalf("abandoned Next: %v, waiter left %v", abandoned, w.waiter != nil)
	}
	w.deliver(ev(EventNodeDataChanged, "/p"))
	if w.Pending() != 1 {
		t.Fatalf("event after an abandoned Next: pending %d, want 1", w.Pending())
	}
	got = nil
	next(root)

	// A waiting Next gets the next event; a second one meanwhile is refused.
	got = nil
	var waitErr error
	Run(root, w.Next(), func(e Event, err error) { got, waitErr = append(got, e), err })
	var second error
	Run(root, w.Next(), func(_ Event, err error) { second = err })
	if !errors.Is(second, ErrInvalidArgument) {
		t.Fatalf("second concurrent Next: %v", second)
	}
	w.deliver(ev(EventNodeCreated, "/p/b"))
	if waitErr != nil || len(got) != 1 || got[0].Path != "/p/b" {
		t.Fatalf("waiting Next got %v, %v", got, waitErr)
	}

	// The end: a waiting Next fails with it, so does every later one, and
	// nothing after it is queued.
	var endErr error
	Run(root, w.Next(), func(_ Event, err error) { endErr = err })
	w.deliver(Event{Type: EventWatchRemoved, Path: "/p"})
	w.deliver(ev(EventNodeCreated, "/p/late"))
	if !errors.Is(endErr, ErrWatchRemoved) || w.Pending() != 0 {
		t.Fatalf("end: %v, pending %d", endErr, w.Pending())
	}
	if err := next(root); !errors.Is(err, ErrWatchRemoved) {
		t.Fatalf("Next after the end: %v", err)
	}
	x := &PersistentWatch{path: "/x"}
	x.deliver(Event{Type: EventNotWatching, State: StateExpired})
	var xerr error
	Run(root, x.Next(), func(_ Event, err error) { xerr = err })
	if !errors.Is(xerr, ErrSessionExpired) {
		t.Fatalf("after NotWatching(Expired): %v", xerr)
	}
}

// A one-time watch that RemoveWatches took away ends every Wait with
// ErrWatchRemoved.
func TestWatchWaitRemoved(t *testing.T) {
	_, root := newStubRoot()
	w := &Watch{path: "/w"}
	var err1, err2 error
	Run(root, w.Wait(), func(_ Event, err error) { err1 = err })
	w.fire(Event{Type: EventWatchRemoved, State: StateConnected, Path: "/w"})
	Run(root, w.Wait(), func(_ Event, err error) { err2 = err })
	if !errors.Is(err1, ErrWatchRemoved) || !errors.Is(err2, ErrWatchRemoved) {
		t.Fatalf("waits ended with %v and %v, want ErrWatchRemoved", err1, err2)
	}
}

package task

import "testing"

// CloseAndWait calls done once every cleanup Close started has ended,
// not before: a cleanup that waits on a later step holds it.
func TestCloseAndWait(t *testing.T) {
	rt, root := newStubRoot()
	s := root.Child()
	var order []string
	var release func()
	s.Defer(Task[Unit](func(_ *Scope, k Cont[Unit]) {
		order = append(order, "cleanup 1 starts")
		release = func() { order = append(order, "cleanup 1 ends"); k(Unit{}, nil) }
	}))
	s.Defer(Task[Unit](func(_ *Scope, k Cont[Unit]) {
		order = append(order, "cleanup 2")
		k(Unit{}, nil)
	}))
	s.CloseAndWait(func() { order = append(order, "done") })
	rt.drain()
	if release == nil {
		t.Fatalf("cleanup 1 never started: %v", order)
	}
	for _, o := range order {
		if o == "done" {
			t.Fatalf("done before every cleanup ended: %v", order)
		}
	}
	release()
	rt.drain()
	if n := len(order); n == 0 || order[n-1] != "done" {
		t.Fatalf("done not called last, after the cleanups: %v", order)
	}
	// With no cleanup, done at once; on a closed scope too.
	calls := 0
	e := root.Child()
	e.CloseAndWait(func() { calls++ })
	e.CloseAndWait(func() { calls++ })
	if calls != 2 {
		t.Fatalf("CloseAndWait with no cleanup called done %d times, want 2", calls)
	}
}

package task

import "testing"

// Scope.CloseAndWait's doc: "CloseAndWait is Close, then done, on the
// executor goroutine, once every deferred cleanup that Close started has
// ended (at once if none did)."
//
// Schedule: a scope with one deferred cleanup and a step waiting in it
// (task.Run in the scope). CloseAndWait counts the cleanup, then Close
// cancels the waiting step; the step's continuation, run by that
// cancellation, withdraws the cleanup with the function Defer returned
// (the "withdraws it" of Defer's doc). Close then starts no cleanup, yet
// done waits for the one counted before Close ran: it never runs.
func TestAdv6CloseAndWaitCleanupWithdrawnDuringClose(t *testing.T) {
	rt, root := newStubRoot()
	c := root.Child()
	ran := false
	withdraw := c.Defer(Task[Unit](func(_ *Scope, k Cont[Unit]) {
		ran = true
		k(Unit{}, nil)
	}))
	parked := Task[Unit](func(s *Scope, k Cont[Unit]) {
		Suspend(s, k, func(Cont[Unit]) func() { return nil })
	})
	Run(c, parked, func(_ Unit, err error) {
		withdraw() // the step undid its work itself: nothing left to clean up
	})
	done := false
	c.CloseAndWait(func() { done = true })
	rt.drain()
	if ran {
		t.Fatalf("the withdrawn cleanup ran")
	}
	if !done {
		t.Fatalf("CloseAndWait never called done, though Close started no cleanup")
	}
}

// The same doc sentence, the other way: a cleanup registered with Defer
// while Close cancels the scope's waits (by the continuation Close's
// cancellation runs) is started by that Close, but CloseAndWait counted
// the cleanups before it: done runs before that cleanup has ended.
func TestAdv6CloseAndWaitCleanupDeferredDuringClose(t *testing.T) {
	rt, root := newStubRoot()
	c := root.Child()
	var order []string
	c.Defer(Task[Unit](func(_ *Scope, k Cont[Unit]) {
		order = append(order, "cleanup 1")
		k(Unit{}, nil)
	}))
	var release func()
	parked := Task[Unit](func(s *Scope, k Cont[Unit]) {
		Suspend(s, k, func(Cont[Unit]) func() { return nil })
	})
	Run(c, parked, func(Unit, error) {})
	c.OnDone(func(error) {
		// Canceled by Close: register the undo of what the step half did.
		c.Defer(Task[Unit](func(_ *Scope, k Cont[Unit]) {
			order = append(order, "cleanup 2 starts")
			release = func() { order = append(order, "cleanup 2 ends"); k(Unit{}, nil) }
		}))
	})
	c.CloseAndWait(func() { order = append(order, "done") })
	rt.drain()
	if release == nil {
		t.Fatalf("Close did not start the cleanup registered during its cancellation: %v", order)
	}
	for _, o := range order {
		if o == "done" {
			t.Fatalf("done ran before every cleanup Close started had ended: %v", order)
		}
	}
	release()
	rt.drain()
}

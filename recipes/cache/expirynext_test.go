package cache

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// Client.Next "fails with the cache's error once it has ended, or with
// ctx's", and the package doc's Errors: "On session expiry ... on the new
// session the cache reads everything again, so changes made meanwhile
// ... are reported". Schedule: a Client's Next waits (its ctx never
// ends); the session expires; meanwhile /d/a is deleted. The cache runs
// on (its Err stays nil) and reads the directory again on the new
// session; the Next must go on waiting and report /d/a Removed. Before
// the fix the Next's flow, bound to the expired session, ended with
// task.ErrSessionExpired, and the doc's loop (for ch, err := Next(ctx);
// err == nil; ...) stopped while the cache ran on.
func TestClientNextWaitsAcrossAnExpiry(t *testing.T) {
	w := newWorld(t, 2)
	must(sim.Run(w, 1, task.Create("/d", nil, task.Persistent)))
	must(sim.Run(w, 1, task.Create("/d/a", nil, task.Persistent)))
	cl := must(NewChildrenClient(w.Execs[0], "/d"))
	var (
		first, second Change
		err1, err2    error
		phase         int
	)
	w.Go(0, func(a *sim.Actor) {
		if err := cl.Start(a.Context()); err != nil {
			err1 = err
			phase = -1
			return
		}
		first, err1 = cl.Next(a.Context())
		phase = 1
		second, err2 = cl.Next(a.Context())
		phase = 2
	})
	if !w.Settle(func() bool { return phase != 0 }) || err1 != nil || len(first.Added) != 1 {
		t.Fatalf("first Next: %+v, %v", first, err1)
	}
	w.Drive() // the second Next waits
	if phase != 1 {
		t.Fatalf("second Next returned before any change: %+v, %v", second, err2)
	}
	if err := w.Server.AdminDelete(w.ServerPath("/d/a")); err != nil {
		t.Fatal(err)
	}
	w.Server.Expire(w.Conns[0])
	w.Settle(func() bool { return phase == 2 && len(cl.Current()) == 0 })
	if phase != 2 {
		t.Fatal("second Next did not return")
	}
	if err2 != nil {
		t.Fatalf("second Next across an expiry: %v (cache's Err %v); want /d/a Removed", err2, cl.Err())
	}
	if got := paths(second.Removed); len(got) != 1 || got[0] != "/d/a" {
		t.Fatalf("second Next: removed %v, want [/d/a]", got)
	}
}

package cache

import (
	"errors"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// An error no retry settles ends the cache with it: a node whose ACL
// denies this session the read (no auth), met at the start or by a cache
// already running, ends the cache (Err, Done) and the waiting Next fails
// with task.ErrNoAuth, instead of leaving it waiting.
func TestNoAuthEndsCache(t *testing.T) {
	secret := []task.ACL{task.DigestACL(task.PermAll, "alice", "pw")}
	for _, running := range []bool{false, true} {
		w := newWorld(t, 2)
		must(sim.Run(w, 1, task.Create("/d", nil, task.Persistent)))
		mk := task.CreateWith(&task.CreateRequest{Path: "/d/secret", Data: []byte("x"), Mode: task.Persistent, ACL: secret})
		tc := must(NewTree("/d", WithData()))
		var next *sim.Outcome[Change]
		if running {
			must(sim.Run(w, 0, tc.Start()))
			must(sim.Run(w, 0, tc.Next())) // the first snapshot: /d alone
			next = sim.Submit(w, 0, tc.Next())
			must(sim.Run(w, 1, c.Seq(mk, task.Create("/d/open", nil, task.Persistent))))
		} else {
			must(sim.Run(w, 1, mk))
			_, err := sim.Run(w, 0, tc.Start())
			if !errors.Is(err, task.ErrNoAuth) {
				t.Errorf("start over an unreadable node: %v, want ErrNoAuth", err)
			}
			next = sim.Submit(w, 0, tc.Next())
		}
		w.Settle(func() bool { return next.Done })
		if !next.Done || !errors.Is(next.Err, task.ErrNoAuth) {
			t.Errorf("running %v: Next: done %v, %v; want ErrNoAuth", running, next.Done, next.Err)
		}
		select {
		case <-tc.Done():
		default:
			t.Errorf("running %v: the cache did not end", running)
		}
		if !errors.Is(tc.Err(), task.ErrNoAuth) {
			t.Errorf("running %v: Err %v, want ErrNoAuth", running, tc.Err())
		}
	}
}

// WithOnEnd's fn is called once, on the executor goroutine, with the
// error the cache ended with: an ACL's refusal, or ErrStopped after Stop.
func TestOnEndSaysWhyTheCacheEnded(t *testing.T) {
	secret := []task.ACL{task.DigestACL(task.PermAll, "alice", "pw")}
	w := newWorld(t, 2)
	must(sim.Run(w, 1, task.Create("/d", nil, task.Persistent)))
	var ends []error
	onEnd := WithOnEnd(func(err error) { ends = append(ends, err) })
	tc := must(NewTree("/d", WithData(), onEnd))
	must(sim.Run(w, 0, tc.Start()))
	mk := task.CreateWith(&task.CreateRequest{Path: "/d/secret", Data: []byte("x"), Mode: task.Persistent, ACL: secret})
	must(sim.Run(w, 1, mk))
	w.Settle(func() bool { return len(ends) > 0 })
	if len(ends) != 1 || !errors.Is(ends[0], task.ErrNoAuth) || !errors.Is(tc.Err(), task.ErrNoAuth) {
		t.Fatalf("ends %v (Err %v), want one, ErrNoAuth", ends, tc.Err())
	}
	must(sim.Run(w, 0, tc.Stop()))
	if len(ends) != 1 {
		t.Fatalf("ends %v after a Stop of an ended cache, want still one", ends)
	}
	must(sim.Run(w, 1, task.Create("/e", nil, task.Persistent)))
	cc := must(NewChildren("/e", onEnd))
	ends = nil
	must(sim.Run(w, 0, cc.Start()))
	must(sim.Run(w, 0, cc.Stop()))
	if len(ends) != 1 || !errors.Is(ends[0], ErrStopped) {
		t.Fatalf("ends %v after Stop, want one, ErrStopped", ends)
	}
}

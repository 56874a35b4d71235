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

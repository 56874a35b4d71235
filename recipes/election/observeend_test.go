package election_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// The blocking Observe's channel closes also when the observer ends for
// good before ctx does (the documentation said only "until ctx ends"):
// here an operator's ACL refuses the directory's listing (task.ErrNoAuth,
// which no retry settles). A reader ranging over the channel stops then,
// rather than wait on an observer that no longer follows the election.
func TestObserveChannelClosesWhenTheObserverEnds(t *testing.T) {
	w, _ := newWorld(t, 1, 1, fakezk.Config{})
	for _, p := range []string{"/svc", "/svc/obs"} {
		if err := w.Server.AdminCreate(w.ServerPath(p), nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	e := mustElection(t, "/svc/obs")
	var ch <-chan election.Observation
	var obsErr error
	var cancel func()
	returned := false
	w.Go(0, func(a *sim.Actor) {
		ctx, c := a.WithCancel(a.Context())
		cancel = c
		ch, obsErr = election.ClientOf(w.Execs[0], e).Observe(ctx)
		returned = true
	})
	if !w.Settle(func() bool { return returned }) || obsErr != nil {
		t.Fatalf("Observe: returned %v, %v", returned, obsErr)
	}
	defer cancel()
	noRead := []task.ACL{{Perms: task.PermAll &^ task.PermRead, Scheme: "world", ID: "anyone"}}
	if err := w.Server.AdminSetACL(w.ServerPath("/svc/obs"), noRead); err != nil {
		t.Fatal(err)
	}
	if err := w.Server.AdminCreate(w.ServerPath("/svc/obs/_c_x-latch-0000000000"), []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	closed := func() bool { // (takes the observations still in the channel)
		for {
			select {
			case _, ok := <-ch:
				if !ok {
					return true
				}
			default:
				return false
			}
		}
	}
	// ZooKeeper does not tell the session of a change to a node it may
	// not READ: the observer's watch sees the new candidate at its
	// re-read (executor.Config.WatchRecheck, twice the session timeout),
	// a background timer that Settle does not wait for.
	for range 3 * w.Timeout() / time.Second {
		w.Clock.Advance(time.Second)
		w.Drive()
	}
	if !closed() {
		t.Fatal("the observer's listing was refused for good and Observe's channel is still open")
	}
}

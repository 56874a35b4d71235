package election_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// The blocking Observe closes its channel when its ctx ends, also while
// the connection is down: a reader ranging over the channel after
// canceling stops then, not when the connection comes back (an outage may
// last as long as the server is down). Before, the channel was closed
// only once the observer's Stop had run on the executor, whose task queue
// is paused while the session is suspended.
func TestObserveChannelClosesDuringAnOutage(t *testing.T) {
	for _, master := range []bool{false, true} {
		w, log := newWorld(t, 1, 1, fakezk.Config{})
		var cand election.Candidate = mustElection(t, "/svc/obs")
		if master {
			cand = mustMaster(t, "/svc/master", "")
		}
		for _, p := range []string{"/svc", "/svc/obs"} {
			if err := w.Server.AdminCreate(w.ServerPath(p), nil, 0); err != nil && !errors.Is(err, task.ErrNodeExists) {
				t.Fatal(err)
			}
		}
		var ch <-chan election.Observation
		var obsErr error
		var cancel func()
		returned := false
		w.Go(0, func(a *sim.Actor) {
			ctx, c := a.WithCancel(a.Context())
			cancel = c
			ch, obsErr = election.ClientOf(w.Execs[0], cand).Observe(ctx)
			returned = true
		})
		if !w.Settle(func() bool { return returned }) || obsErr != nil {
			t.Fatalf("master %v: Observe: returned %v, %v", master, returned, obsErr)
		}
		// A long outage: the client hears of it at once, and of nothing
		// more until it ends.
		w.Server.Partition(w.Conns[0], time.Hour, false)
		w.Drive()
		cancel()
		w.Drive()               // no time passes: the outage goes on
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
		if !closed() {
			t.Fatalf("master %v: Observe's ctx ended during an outage and its channel is still open", master)
		}
		if !w.Settle(func() bool { return w.Actors() == 0 }) {
			t.Fatalf("master %v: actors left after the outage: %d", master, w.Actors())
		}
		// The outage outlived the session: the observer, stopped on the
		// next one, reads nothing more.
		w.Settle(func() bool { return false })
		if master {
			continue
		}
		before := log.lists[0]
		if err := w.Server.AdminCreate(w.ServerPath("/svc/obs/_c_x-latch-0000000007"), nil, 0); err != nil {
			t.Fatal(err)
		}
		w.Settle(func() bool { return false })
		if n := log.lists[0] - before; n != 0 {
			t.Fatalf("the observer listed the directory %d times after its ctx ended: not stopped", n)
		}
	}
}

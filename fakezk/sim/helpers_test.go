package sim_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// LostReplies drops the connection after every create (rate 1) and counts
// the losses; Across runs a flow again after a session expiry; After waits
// on the simulated clock.
func TestHelpers(t *testing.T) {
	var cnt sim.Counts
	lost := &sim.LostReplies{Rate: 1, Counts: &cnt}
	var sent []task.Request
	lost.Sent = func(_ int, req task.Request) { sent = append(sent, req) }
	var created, waited, expired bool
	sc := sim.Scenario{
		Name:     "helpers",
		Clients:  1,
		Wrap:     lost.Wrap,
		Duration: 5 * time.Second,
		Live:     func(*sim.Trial) bool { return expired },
		Setup: func(r *sim.Trial) error {
			lost.World, lost.Rand = r.World, r.Rand
			return nil
		},
		Workload: func(r *sim.Trial) {
			sim.Across(r, r.Execs[0], task.Create("/x", nil, task.Persistent), &cnt, func(_ string, err error) {
				created = err == nil || errors.Is(err, task.ErrConnectionLoss)
			})
			start := r.Clock.Now()
			sim.After(r, r.Execs[0], 2*time.Second, func() {
				waited = r.Clock.Now().Sub(start) >= 2*time.Second
				r.Server.Expire(r.Conns[0])
				sim.Across(r, r.Execs[0], task.Sync("/"), &cnt, func(_ task.Unit, err error) {
					expired = err == nil
				})
			})
		},
	}
	res := sim.RunSeed(sc, 1, false)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if !created || !waited || !expired || cnt.Losses == 0 || cnt.Expiries == 0 || len(sent) == 0 {
		t.Fatalf("created %v waited %v after-expiry %v losses %d reruns %d sent %d", created, waited, expired, cnt.Losses, cnt.Expiries, len(sent))
	}
}

// LostReplies loses nothing while Setup runs (Setup runs with no fault),
// nor before World and Rand are set: a create in Setup succeeds at rate 1.
func TestLostRepliesNotInSetup(t *testing.T) {
	var cnt sim.Counts
	lost := &sim.LostReplies{Rate: 1, Counts: &cnt}
	var setupErr error
	sc := sim.Scenario{
		Name:     "helpers-setup",
		Clients:  1,
		Wrap:     lost.Wrap,
		Duration: time.Second,
		Live:     func(*sim.Trial) bool { return true },
		Setup: func(r *sim.Trial) error {
			// Before World and Rand are set: no panic, nothing lost.
			if _, err := sim.Run(r.World, 0, task.Create("/before", nil, task.Persistent)); err != nil {
				return err
			}
			lost.World, lost.Rand = r.World, r.Rand
			_, setupErr = sim.Run(r.World, 0, task.Create("/after", nil, task.Persistent))
			return setupErr
		},
	}
	if res := sim.RunSeed(sc, 1, false); res.Err != nil || setupErr != nil || cnt.Losses != 0 {
		t.Fatalf("setup: %v / %v, %d losses", res.Err, setupErr, cnt.Losses)
	}
}

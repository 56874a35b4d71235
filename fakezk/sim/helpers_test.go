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

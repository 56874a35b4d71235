package queue_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/queue"
)

// Each known bug of a mode (queue.go), switched back on, is caught by that
// mode's simulation: five hunts over disjoint seed ranges, each within 300
// seeds (sim.Catch logs the seeds each needed). Not parallel: canaries
// are process-wide.
func TestCanariesCaught(t *testing.T) {
	for _, tc := range []struct {
		mode  queue.Mode
		names []canary.Name
	}{
		{queue.AtMostOnce, queue.AtMostOnceCanaries},
		{queue.AtLeastOnce, queue.AtLeastOnceCanaries},
	} {
		for _, name := range tc.names {
			t.Run(string(name), func(t *testing.T) {
				restore := canary.Enable(name)
				defer restore()
				_, sc := newQueueSim(tc.mode)
				sim.Catch(t, sc, string(name), 5, 300)
			})
		}
	}
}

// queue/epoch-any-session uses the epoch's version one session read on
// another: seed 2374 of the at-most-once scenario (make test on 9007ab1,
// with the simulation's lagging member at a new session) has a consumer
// expire and list, on its new session, from a member behind the
// directory's re-creation: the old incarnation's listing passed the check
// of the epoch its Queue had read on the old session, and the take took
// an item of the new incarnation ahead of older ones. The seed passes
// with the epoch read again on each session.
func TestCanaryEpochAnySession(t *testing.T) {
	restore := canary.Enable(queue.BugEpochAnySession)
	defer restore()
	_, sc := newQueueSim(queue.AtMostOnce)
	sc.NoBlinks = true // the seed's history from before the blink class, which changes it
	if res := sim.RunSeed(sc, 2374, false); res.Err == nil {
		t.Fatal("seed 2374 passes with the bug: the scenario no longer reaches a listing older than the epoch")
	} else {
		t.Logf("seed 2374: %v", res.Err)
	}
}

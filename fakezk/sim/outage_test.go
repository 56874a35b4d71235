package sim_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// ContextOutage: in the seeds that draw Plan.OutageEnds, contexts made
// with CancelAfterSteps and drawn for an outage end while their client is
// cut off, after it sends a request; in the others, and with OutageEnds
// off, none is cut and none ends in an outage (the scenario has no other
// fault that cuts a client off: its one class, Delay, fires at a
// negligible rate). A context waiting for a cut whose client sends
// nothing ends at the latest a session timeout after it was made.
func TestContextOutage(t *testing.T) {
	type tally struct {
		ends, inOutage, cuts, plans, idle, idleLate int
		late, lateConnected                         int // client 0's contexts that ended at a later instant than made
	}
	run := func(t *testing.T, on bool, seeds int) tally {
		var tl tally
		var r *sim.Trial
		sc := sim.Scenario{
			Name:       "outage",
			Clients:    2,
			OutageEnds: on,
			Faults:     sim.Faults{Allow: sim.Of(sim.Delay), MaxRate: 1e-12},
			Duration:   5 * time.Second,
			Setup: func(tr *sim.Trial) error {
				r = tr
				_, err := sim.Run(tr.World, 0, task.Create("/x", nil, task.Persistent))
				return err
			},
			// Client 0: actor A makes a context and waits for its end,
			// actor B reads in a loop (the requests a cut waits for).
			// Client 1: actor A alone: its client sends nothing, so a
			// context waiting for a cut ends at the fallback.
			Workload: func(tr *sim.Trial) {
				for i := range 2 {
					tr.Go(i, func(a *sim.Actor) {
						for !tr.Stopping() && a.Context().Err() == nil {
							ctx, cancel := a.CancelAfterSteps(a.Context(), a.Rand().IntN(4))
							made := r.Clock.Now()
							_ = a.Sleep(ctx, time.Hour)
							if a.Context().Err() == nil && !tr.Stopping() {
								tl.ends++
								if !r.Conns[i].Connected() {
									tl.inOutage++
								}
								if i == 0 && tr.FaultsOn() && r.Clock.Now().After(made) {
									tl.late++
									if r.Conns[i].Connected() {
										tl.lateConnected++
									}
								}
								if i == 1 {
									tl.idle++
									if r.Clock.Now().Sub(made) > r.Timeout() {
										tl.idleLate++
									}
								}
							}
							cancel()
							tr.Progress(i)
							_ = a.Sleep(a.Context(), 10*time.Millisecond)
						}
					})
				}
				tr.Go(0, func(a *sim.Actor) {
					for !tr.Stopping() && a.Context().Err() == nil {
						_, _ = executor.Await(a.Context(), a.Exec(), task.Get("/x"))
						_ = a.Sleep(a.Context(), 10*time.Millisecond)
					}
				})
			},
		}
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			res := sim.RunSeed(sc, seed, false)
			if res.Err != nil {
				t.Fatalf("seed %d: %v", seed, res.Err)
			}
			tl.cuts += res.FiredOf(sim.ContextOutage)
			if res.Plan.OutageEnds {
				tl.plans++
			} else if n := res.FiredOf(sim.ContextOutage); n > 0 {
				t.Errorf("seed %d: %d context outages in a plan without OutageEnds", seed, n)
			}
		}
		t.Logf("OutageEnds=%v: %d seeds drew it; %d contexts ended, %d while their client was cut off; %d cuts; client 0: %d ended later than made, %d of them connected; client 1: %d waits, %d past the session timeout",
			on, tl.plans, tl.ends, tl.inOutage, tl.cuts, tl.late, tl.lateConnected, tl.idle, tl.idleLate)
		return tl
	}
	const seeds = 40
	off := run(t, false, seeds)
	if off.plans != 0 || off.cuts != 0 || off.inOutage != 0 {
		t.Errorf("OutageEnds off: %d plans drew it, %d cuts, %d contexts ended cut off; want none", off.plans, off.cuts, off.inOutage)
	}
	on := run(t, true, seeds)
	if on.plans < seeds/4 || on.plans > 3*seeds/4 {
		t.Errorf("OutageEnds on: %d of %d seeds drew it, want about one in two", on.plans, seeds)
	}
	if on.cuts == 0 || on.inOutage < on.cuts {
		t.Errorf("OutageEnds on: %d cuts, %d contexts ended while cut off; want cuts, each ending its context in the outage", on.cuts, on.inOutage)
	}
	// A context drawn for a step ends at the instant it was made (the
	// world ends it at once when it has nothing else to run); on client
	// 0, whose reads a cut waits for, one that ends later while the
	// faults are on was drawn for an outage, and ends in it.
	if on.late == 0 || on.lateConnected > 0 {
		t.Errorf("client 0: %d contexts ended later than made, %d of them with the client connected; want some, all cut off", on.late, on.lateConnected)
	}
	if on.idle == 0 || on.idleLate > 0 || off.idleLate > 0 {
		t.Errorf("idle waits: %d, %d (on) and %d (off) ended later than a session timeout after they began", on.idle, on.idleLate, off.idleLate)
	}
}

package sim_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// restartConn aims RestartNow at client 0's creates under /d, just sent.
type restartConn struct {
	*fakezk.Conn
	at func(req task.Request)
}

func (c *restartConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.Conn.Do(req, done, watch)
	c.at(req)
}

// RestartNow: in a seed whose plan has the Restart class, the scenario
// restarts the server just after client 0 sent a create, applied: the
// create's reply is a connection loss and the node is there, every
// client is cut off at once (client 1 too), the fault is noted (aimed by
// the scenario) and counted, and both clients come back when the server
// is up. It is refused a second time while the server is down, and in a
// plan without the class.
func TestRestartNow(t *testing.T) {
	type tally struct{ plans, aimed, lost, bothCut, back int }
	var tl tally
	const d = 700 * time.Millisecond
	var r *sim.Trial
	var got bool
	sc := sim.Scenario{
		Name:     "restartnow",
		Clients:  2,
		Faults:   sim.Faults{Allow: sim.Of(sim.Restart, sim.Delay), MaxRate: 1e-12}, // the injector's: never in practice
		Duration: 3 * time.Second,
		Wrap: func(i int, c *fakezk.Conn) task.Conn {
			if i != 0 {
				return c
			}
			return &restartConn{Conn: c, at: func(req task.Request) {
				if cr, ok := req.(*task.CreateRequest); !ok || cr.Path != "/d/n" || r == nil || got {
					return
				}
				got = r.RestartNow(0, true, d)
				if got {
					tl.aimed++
					if !r.Conns[0].Connected() && !r.Conns[1].Connected() {
						tl.bothCut++
					}
					if r.RestartNow(0, true, d) {
						r.Errorf("RestartNow restarted the server while it was down")
					}
				}
			}}
		},
		Setup: func(tr *sim.Trial) error {
			r, got = tr, false
			_, err := sim.Run(tr.World, 0, task.Create("/d", nil, task.Persistent))
			return err
		},
		Workload: func(r *sim.Trial) {
			r.Go(0, func(a *sim.Actor) {
				_ = a.Sleep(a.Context(), 100*time.Millisecond)
				_, err := executor.Await(a.Context(), a.Exec(), task.Create("/d/n", nil, task.Persistent))
				on := r.Plan.On.Has(sim.Restart)
				switch {
				case got != on:
					r.Errorf("RestartNow = %v with the Restart class %v in the plan", got, on)
				case got && !errors.Is(err, task.ErrConnectionLoss):
					r.Errorf("create sent just before RestartNow(applied): %v, want a connection loss", err)
				case got:
					if _, ok := r.NodeStat("/d/n"); !ok {
						r.Errorf("create sent just before RestartNow(applied) not applied")
					}
					tl.lost++
				case err != nil:
					r.Errorf("create: %v", err)
				}
				for !r.Stopping() && a.Context().Err() == nil {
					if r.Conns[0].Connected() && r.Conns[1].Connected() {
						if got {
							tl.back++
							got = false
						}
						r.Progress(0)
						r.Progress(1)
					}
					_ = a.Sleep(a.Context(), 50*time.Millisecond)
				}
			})
		},
	}
	const seeds = 40
	tl.plans = aimedSeeds(t, sc, seeds, sim.Restart, func(p sim.Plan) bool { return p.On.Has(sim.Restart) }, one)
	t.Logf("%d of %d seeds with the Restart class: %d aimed, %d creates' replies lost, %d with both clients cut, %d back after", tl.plans, seeds, tl.aimed, tl.lost, tl.bothCut, tl.back)
	if tl.plans == 0 || tl.plans == seeds || tl.aimed != tl.plans || tl.lost != tl.aimed || tl.bothCut != tl.aimed || tl.back != tl.aimed {
		t.Errorf("want some seeds with the class and some without, each of those aimed, its create's reply lost, both clients cut, and back after")
	}
}

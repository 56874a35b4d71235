package sim_test

import (
	"fmt"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// watchedReadScenario: client 0 creates /w/0, /w/1, ... every 20ms;
// client 1 reads the node created last (as a process told its name by
// another would) with a watch every 10ms, and never reads without one.
// stale gets the server's count of stale answers at the end of each seed.
func watchedReadScenario(stale *int) sim.Scenario {
	const dir = "/w"
	var last string
	var loop func(r *sim.Trial, i int, n int)
	loop = func(r *sim.Trial, i int, n int) {
		if r.Stopping() || r.Closing() {
			return
		}
		var step task.Task[task.Unit]
		if i == 0 {
			p := fmt.Sprintf("%s/%d", dir, n)
			step = c.Seq(c.Sleep(20*time.Millisecond), c.Map(task.Create(p, nil, task.Persistent), func(string) task.Unit {
				last = p
				return task.Unit{}
			}))
		} else if last != "" {
			step = c.Seq(c.Sleep(10*time.Millisecond), c.Map(task.ExistsW(last), func(task.StatWatch) task.Unit { return task.Unit{} }))
		} else {
			step = c.Sleep(10 * time.Millisecond)
		}
		executor.Submit(r.Execs[i], step, func(task.Unit, error) {
			r.Progress(i)
			loop(r, i, n+1)
		})
	}
	return sim.Scenario{
		Name:     "watched-reads",
		Clients:  2,
		NoTwins:  true,
		Faults:   sim.Faults{Allow: sim.Of(sim.Lag), MaxRate: 0.05},
		Duration: 3 * time.Second,
		Setup: func(r *sim.Trial) error {
			last = ""
			_, err := sim.Run(r.World, 0, task.Create(dir, nil, task.Persistent))
			return err
		},
		Workload: func(r *sim.Trial) {
			for i := range 2 {
				loop(r, i, 0)
			}
		},
		Invariants: []sim.Invariant{sim.InvariantFunc(func(r *sim.Trial) error {
			*stale = r.Server.StaleReads()
			return nil
		})},
	}
}

// One lag seed in two of a scenario that does not set LagWatched has its
// watched reads answered from the lagging view (Plan.LagWatched), the
// others catch the member up first; LagWatched sets it in every lag
// seed, NoLagWatched in none. A reader that only reads with a watch sees
// stale data exactly in the seeds whose plan says so.
func TestLagWatchedDrawn(t *testing.T) {
	const seeds = 200
	for _, mode := range []string{"drawn", "LagWatched", "NoLagWatched"} {
		t.Run(mode, func(t *testing.T) {
			var stale int
			sc := watchedReadScenario(&stale)
			sc.LagWatched = mode == "LagWatched"
			sc.NoLagWatched = mode == "NoLagWatched"
			var lagSeeds, drawn, staleSeeds int
			for seed := uint64(1); seed <= seeds; seed++ {
				stale = 0
				res := sim.RunSeed(sc, seed, false)
				if res.Err != nil {
					t.Fatalf("seed %d: %v", seed, res.Err)
				}
				if !res.Plan.On.Has(sim.Lag) {
					if res.Plan.LagWatched {
						t.Fatalf("seed %d: watched reads lag in a plan without the lag class", seed)
					}
					continue
				}
				lagSeeds++
				if res.Plan.LagWatched {
					drawn++
				}
				if stale > 0 {
					staleSeeds++
					if !res.Plan.LagWatched {
						t.Fatalf("seed %d: %d stale answers to watched reads in a plan without LagWatched", seed, stale)
					}
				}
			}
			t.Logf("%d lag seeds of %d, %d with watched reads lagging, %d with a stale answer", lagSeeds, seeds, drawn, staleSeeds)
			switch mode {
			case "drawn":
				if drawn < lagSeeds/4 || drawn > lagSeeds*3/4 {
					t.Fatalf("%d of %d lag seeds draw lagging watched reads, want about half", drawn, lagSeeds)
				}
			case "LagWatched":
				if drawn != lagSeeds {
					t.Fatalf("%d of %d lag seeds have lagging watched reads, want all", drawn, lagSeeds)
				}
			case "NoLagWatched":
				if drawn != 0 {
					t.Fatalf("%d lag seeds have lagging watched reads, want none", drawn)
				}
			}
			if drawn > 0 && staleSeeds == 0 {
				t.Fatal("no seed answered a watched read stale: the plan does not reach the server")
			}
		})
	}
}

package sim_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// incrTask is the chain the scenario runs (tests swap in a buggy one).
var incrTask = incr

// incr is the user's own task chain under test: add one to a counter node
// with a compare-and-set (read, write with the version read), starting
// again from the read on a bad version or a lost connection.
func incr(path string) task.Task[int64] {
	round := c.Then(task.Get(path), func(d task.Data) task.Task[int64] {
		v := int64(binary.BigEndian.Uint64(d.Data)) + 1
		data := binary.BigEndian.AppendUint64(nil, uint64(v))
		return c.Map(task.Set(path, data, d.Stat.Version), func(task.Stat) int64 { return v })
	})
	return c.Retry(round, c.Policy{On: []error{task.ErrBadVersion, task.ErrConnectionLoss, task.ErrNotSent}})
}

// counterScenario: three clients increment the counter in a loop under
// every fault class but Wipe and Operator (the counter is the data: an
// operator who deletes it loses it, as a wipe does); a client process
// that crashes starts its loop again. No value is returned twice, and the
// history of increments is linearizable.
func counterScenario() sim.Scenario {
	var ids *sim.IDs
	var loop func(r *sim.Trial, i int)
	const clients = 3
	return sim.Scenario{
		Name:     "counter",
		Clients:  clients,
		Faults:   sim.Faults{Allow: sim.AllFaults &^ sim.Of(sim.Operator)},
		Duration: 10 * time.Second,
		Setup: func(r *sim.Trial) error {
			ids = sim.NewIDs()
			_, err := sim.Run(r.World, 0, task.Create("/counter", make([]byte, 8), task.Persistent))
			return err
		},
		Restart: func(r *sim.Trial, i int) {
			ids.Unknown(i) // the dead process's increment may have been applied
			loop(r, i)
		},
		Workload: func(r *sim.Trial) {
			loop = func(r *sim.Trial, i int) {
				if r.Stopping() || r.Closing() {
					return
				}
				ids.Call(i)
				think := c.Sleep(time.Duration(r.Rand.Int64N(int64(100 * time.Millisecond))))
				executor.Submit(r.Execs[i], c.Seq(think, incrTask("/counter")), func(v int64, err error) {
					switch {
					case err == nil:
						r.Check(ids.Return(i, v))
						r.Progress(i)
					case errors.Is(err, task.ErrSessionExpired):
						ids.Unknown(i) // the write may have been applied
					case r.Closing():
						return
					default:
						r.Errorf("client %d: %v", i, err)
					}
					loop(r, i)
				})
			}
			for i := range clients {
				loop(r, i)
			}
		},
		Invariants: []sim.Invariant{sim.InvariantFunc(func(*sim.Trial) error { return ids.Linearizable() })},
	}
}

// Testing one's own task chain under simulation: each seed picks its
// faults, runs the workload for 10 simulated seconds, stops the faults,
// requires every client to progress again and checks the invariants. In
// a test, sim.Check(t, counterScenario(), 200) does the loop below and
// prints the command that replays a failing seed.
func Example() {
	sc := counterScenario()
	var st sim.Stats
	for seed := uint64(1); seed <= 20; seed++ {
		res := sim.RunSeed(sc, seed, false)
		if res.Err != nil {
			fmt.Println("seed", seed, "failed:", res.Err)
		}
		st.Add(res)
	}
	fmt.Printf("%d seeds, %d failed\n", st.Seeds, st.Failures())
	// Output:
	// 20 seeds, 0 failed
}

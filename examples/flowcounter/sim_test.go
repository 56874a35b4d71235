package main

import (
	"errors"
	"strconv"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// The counter under the simulation: three clients increment it in a
// loop under every fault class but the operator's, with writes' replies
// often lost. Judged: no two increments return the same value, each
// value returned is at most the counter's at that moment, and at the end
// the counter is between the increments acknowledged and those plus the
// ones whose outcome is unknown.
func TestCounterUnderFaults(t *testing.T) {
	n := 30
	if testing.Short() {
		n = 8
	}
	var acked, unknown int
	if sim.Check(t, scenario(Increment, &acked, &unknown), n).Failures() > 0 {
		return
	}
	t.Logf("%d seeds: %d increments acknowledged, %d unknown", n, acked, unknown)
	if acked == 0 || unknown == 0 {
		t.Fatal("no increment, or no reply lost: the scenario checks little")
	}
}

// The classic bug, a write that ignores the version read, is caught.
func TestCounterCatchesBlindWrite(t *testing.T) {
	blind := func(f *task.F, path string, delta int64) (int64, error) {
		d, err := task.Await(f, task.Get(path))
		if err != nil {
			return 0, err
		}
		n := parse(d.Data) + delta
		_, err = task.Await(f, task.Set(path, []byte(fmtInt(n)), task.AnyVersion))
		return n, err
	}
	var acked, unknown int
	sim.Catch(t, scenario(blind, &acked, &unknown), "a write that ignores the version", 2, 50)
}

func scenario(inc func(*task.F, string, int64) (int64, error), acked, unknown *int) sim.Scenario {
	var returned map[int64]int
	var seedAcked, seedUnknown int
	var world *sim.World
	var loop func(r *sim.Trial, i int)
	loop = func(r *sim.Trial, i int) {
		if r.Stopping() || r.Closing() {
			return
		}
		executor.Submit(r.Execs[i], task.Flow(func(f *task.F) (int64, error) {
			if _, err := task.Await(f, c.Sleep(time.Duration(r.Rand.Int64N(int64(20*time.Millisecond))))); err != nil {
				return 0, err
			}
			return inc(f, "/counter", 1)
		}), func(v int64, err error) {
			switch {
			case r.Closing():
				return
			case errors.Is(err, ErrOutcomeUnknown):
				seedUnknown++
				*unknown++
			case errors.Is(err, task.ErrSessionExpired) || errors.Is(err, task.ErrConnectionLoss):
				seedUnknown++ // the blind write's outcome may be unknown too
			case err != nil:
				r.Errorf("client %d: %v", i, err)
			default:
				d, _, _ := r.NodeData("/counter")
				if other, dup := returned[v]; dup {
					r.Errorf("clients %d and %d both got %d", other, i, v)
				} else if v > parse(d) {
					r.Errorf("client %d got %d, the counter is %s", i, v, d)
				}
				returned[v] = i
				seedAcked++
				*acked++
				r.Progress(i)
			}
			loop(r, i)
		})
	}
	return sim.Scenario{
		Name:    "flowcounter/3",
		Clients: 3,
		Faults:  sim.Faults{Allow: sim.AllFaults &^ sim.Of(sim.Operator)},
		Wrap: func(_ int, conn *fakezk.Conn) task.Conn {
			return &lossySets{Conn: conn, world: &world}
		},
		Duration: 5 * time.Second,
		Setup: func(r *sim.Trial) error {
			returned, seedAcked, seedUnknown, world = map[int64]int{}, 0, 0, nil
			_, err := sim.Run(r.World, 0, task.Create("/counter", []byte("0"), task.Persistent))
			world = r.World
			return err
		},
		Workload: func(r *sim.Trial) {
			for i := range r.Execs {
				loop(r, i)
			}
		},
		Restart: loop,
		Invariants: []sim.Invariant{sim.InvariantFunc(func(r *sim.Trial) error {
			d, _, _ := r.NodeData("/counter")
			if v := parse(d); v < int64(seedAcked) || v > int64(seedAcked+seedUnknown) {
				return errors.New("counter " + string(d) + " outside acknowledged " + fmtInt(int64(seedAcked)) + " plus unknown " + fmtInt(int64(seedUnknown)))
			}
			return nil
		})},
	}
}

// lossySets drops the connection just after every fourth write it sends
// (applied or not, alternately), once the world is set: the write's
// reply is lost.
type lossySets struct {
	*fakezk.Conn
	world **sim.World
	n     int
}

func (l *lossySets) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	l.Conn.Do(req, done, watch)
	if _, ok := req.(*task.SetDataRequest); ok && *l.world != nil {
		if l.n++; l.n%4 == 0 {
			(*l.world).Server.Drop(l.Conn, l.n%8 == 0)
		}
	}
}

func parse(b []byte) int64 { n, _ := strconv.ParseInt(string(b), 10, 64); return n }

func fmtInt(n int64) string { return strconv.FormatInt(n, 10) }

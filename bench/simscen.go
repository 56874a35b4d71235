package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/peers"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// simDuration is the simulated time each seed's workload runs under faults.
const simDuration = 5 * time.Second

const (
	simLockDir = "/locks/l"
	simLogDir  = "/log"
	simSeqPath = "/ids/seq"
)

// lockIDScenario is the lock + ID scenario on fakezk/sim's scenario runner
// (sim.RunSeed: a fault plan drawn from the seed, liveness once the faults
// stop, invariants): each client loops acquiring one lock, logging
// "enter" with a fenced write, drawing an ID by compare-and-set, logging
// "exit" and releasing. Judged by the fencing log (tokens never go down in
// the server's order), IDs unique and linearizable, every client
// progressing after the faults, no contender node left, no client error
// but the end of a session. failed counts the rounds that did not
// complete under the faults.
func lockIDScenario(clients int, failed *int) sim.Scenario {
	var (
		ids     *sim.IDs
		lk      *lock.Lock
		ended   []bool
		stopped int
	)
	var round func(r *sim.Trial, i int)
	round = func(r *sim.Trial, i int) {
		if r.Stopping() || r.Closing() {
			if !ended[i] {
				ended[i] = true
				stopped++
			}
			return
		}
		next := func() {
			executor.Submit(r.Execs[i], c.Sleep(10*time.Millisecond), func(task.Unit, error) { round(r, i) })
		}
		executor.Submit(r.Execs[i], lk.Acquire(), func(h *lock.Held, err error) {
			if err != nil {
				if !r.Closing() && !errors.Is(err, task.ErrSessionExpired) && !errors.Is(err, lock.ErrLockLost) {
					r.Errorf("client %d: acquire: %v", i, err)
				}
				*failed++
				next()
				return
			}
			ids.Call(i)
			section := c.Seq(h.Fenced(sim.FencedEntry(simLogDir, h.Token(), "enter")),
				c.Then(seqid.Next(simSeqPath), func(id int64) task.Task[[]task.MultiResult] {
					r.Check(ids.Return(i, id))
					return h.Fenced(sim.FencedEntry(simLogDir, h.Token(), "exit"))
				}))
			executor.Submit(r.Execs[i], section, func(_ []task.MultiResult, err error) {
				ids.Unknown(i) // no-op if the ID was returned
				if err != nil {
					*failed++
					if !r.Closing() && !errors.Is(err, lock.ErrLockLost) && !errors.Is(err, task.ErrSessionExpired) && !task.IsRetryable(err) {
						r.Errorf("client %d: section: %v", i, err)
					}
				}
				executor.Submit(r.Execs[i], h.Release(), func(_ task.Unit, rerr error) {
					if rerr != nil && !r.Closing() {
						r.Errorf("client %d: release: %v", i, rerr)
					}
					if err == nil && rerr == nil {
						r.Progress(i)
					}
					next()
				})
			})
		})
	}
	return sim.Scenario{
		Name:    fmt.Sprintf("bench lock+id/%d", clients),
		Clients: clients,
		// The network and server classes the published figures were
		// measured with; the process, operator and member classes are
		// judged by the package's own scenario (fakezk/sim).
		Faults:   sim.Faults{Allow: sim.AllFaults &^ sim.Of(sim.CrashRestart, sim.Operator, sim.Pause, sim.Lag), MaxRate: 0.01},
		Duration: simDuration,
		Setup: func(r *sim.Trial) error {
			ids, ended, stopped = sim.NewIDs(), make([]bool, clients), 0
			var err error
			if lk, err = lock.New(simLockDir); err != nil {
				return err
			}
			for _, p := range []string{simLogDir, "/ids"} {
				if _, err := sim.Run(r.World, 0, task.Create(p, nil, task.Persistent)); err != nil {
					return err
				}
			}
			return nil
		},
		Workload: func(r *sim.Trial) {
			for i := range clients {
				round(r, i)
			}
		},
		Quiesce: func(r *sim.Trial) bool { return stopped == clients && len(r.Children(simLockDir)) == 0 },
		Invariants: []sim.Invariant{
			sim.InvariantFunc(func(r *sim.Trial) error { _, err := sim.CheckFencing(r.World, simLogDir); return err }),
			sim.InvariantFunc(func(*sim.Trial) error { return ids.Linearizable() }),
			sim.NoClientErrors(task.ErrSessionExpired, task.ErrClosed),
		},
	}
}

// simSeed runs one seed of the lock + ID scenario and returns the rounds
// that failed under the faults; a violated invariant is an error that
// names the seed.
func simSeed(seed uint64, clients int) (failed int, err error) {
	res := sim.RunSeed(lockIDScenario(clients, &failed), seed, false)
	if res.Err != nil {
		return failed, fmt.Errorf("sim seed %d (%s, %s): %s: %w", seed, res.Scenario, res.Plan, res.Kind, res.Err)
	}
	return failed, nil
}

// simRun measures simulated seeds per second: one seed after another, on
// this goroutine, for r.Warmup then r.Duration. Latency is one seed's
// simulation; Errors counts rounds that failed under the drawn faults
// (expected), while a violated invariant fails the run.
func simRun(ctx context.Context, r runSpec) (measured, error) {
	clock := task.RealClock()
	start := clock.Now()
	t0, end := start.Add(r.Warmup), start.Add(r.Warmup+r.Duration)
	var lat []time.Duration
	var res peers.Result
	for seed := uint64(1); ctx.Err() == nil; seed++ {
		s := clock.Now()
		if !s.Before(end) {
			break
		}
		failed, err := simSeed(seed, r.Clients)
		if err != nil {
			return measured{}, err
		}
		e := clock.Now()
		res.Total++
		if s.Before(t0) {
			continue
		}
		res.Errors += int64(failed)
		lat = append(lat, e.Sub(s))
		if r.Done != nil {
			r.Done(int64(len(lat)))
		}
	}
	if err := ctx.Err(); err != nil {
		return measured{}, err
	}
	if len(lat) == 0 {
		return measured{}, errors.New("sim: no seed finished within the duration")
	}
	res.Ops, res.Seconds, res.Latency = int64(len(lat)), clock.Now().Sub(t0).Seconds(), peers.Summarize(lat)
	return measured{Result: res}, nil
}

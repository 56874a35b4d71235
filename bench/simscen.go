package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/peers"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// simRounds is how many lock+ID rounds each simulated client runs.
const simRounds = 5

// simSeed simulates one seed of the lock+ID scenario: clients on a fake
// server with faults drawn from the seed (drops, partitions, delays,
// expiries), each running simRounds rounds of: acquire the lock, draw an
// ID by compare-and-set, release. A round that fails (session expired,
// lock lost) is counted and the next one starts. Checked: no ID is handed
// out twice, and every client's flow ends. It returns the failed rounds.
func simSeed(seed uint64, clients int) (failed int, err error) {
	w, err := sim.New(sim.Config{Seed: seed, Clients: clients, Server: fakezk.Config{
		FaultRate: 0.02, Faults: fakezk.FaultConfig{MaxPartition: 10 * time.Second, MaxDelay: time.Second}}})
	if err != nil {
		return 0, err
	}
	defer w.Close()
	l, err := lock.New("/sim/lock")
	if err != nil {
		return 0, err
	}
	seen := map[int64]int{}
	var dup error
	// Each round is a flow of its own: an expiry ends the round's flow,
	// and the next round starts on the next session.
	left := make([]int, clients)
	var errs []error
	var start func(i int)
	start = func(i int) {
		round := c.Then(l.Acquire(), func(h *lock.Held) task.Task[task.Unit] {
			draw := c.Map(seqid.Next("/sim/id"), func(id int64) task.Unit {
				if prev, ok := seen[id]; ok && dup == nil {
					dup = fmt.Errorf("seed %d: id %d drawn by clients %d and %d", seed, id, prev, i)
				}
				seen[id] = i
				return task.Unit{}
			})
			return c.Then(draw, func(task.Unit) task.Task[task.Unit] { return h.Release() })
		})
		executor.Submit(w.Execs[i], round, func(_ task.Unit, err error) {
			if err != nil {
				if !expected(err) {
					errs = append(errs, fmt.Errorf("seed %d: client %d: %w", seed, i, err))
				}
				failed++
			}
			if left[i]--; left[i] > 0 {
				start(i)
			}
		})
	}
	for i := range clients {
		left[i] = simRounds
		start(i)
	}
	if !w.Settle(func() bool { return slices.Max(left) == 0 }) {
		return failed, fmt.Errorf("seed %d: %w", seed, sim.ErrStuck)
	}
	if err := errors.Join(errs...); err != nil {
		return failed, err
	}
	return failed, dup
}

// expected are the ways a round may fail under the drawn faults.
func expected(err error) bool {
	return errors.Is(err, task.ErrSessionExpired) || errors.Is(err, lock.ErrLockLost) || task.IsRetryable(err)
}

// simRun measures simulated seeds per second: one seed after another, on
// this goroutine, for r.Warmup then r.Duration. Latency is one seed's
// simulation; Errors counts rounds that failed under the drawn faults
// (expected), while a duplicate ID or a stuck seed fails the run.
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

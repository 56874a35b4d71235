package main

import (
	"context"
	"sync/atomic"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/peers"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// runSpec is one measured run of the library's side of a scenario.
type runSpec struct {
	Addr           string
	Clients        int
	Path           string
	Warmup         time.Duration
	Duration       time.Duration
	SessionTimeout time.Duration
	Outstanding    int
	// Done is called with the count of measured operations so far.
	Done func(total int64)
}

// measured is a run's result with the requests the clients sent.
type measured struct {
	peers.Result
	// Requests is the number of requests the clients sent during the
	// run (warm-up included; connecting and setup excluded), counted at
	// the Conn: Requests/Result.Total is round trips per operation.
	Requests int64
}

// RoundTrips is requests per operation (0 when not counted).
func (m measured) RoundTrips() float64 {
	if m.Total == 0 || m.Requests == 0 {
		return 0
	}
	return float64(m.Requests) / float64(m.Total)
}

// perClient runs a blocking op per client (from mk, given the client's
// executor) under peers.Drive.
func perClient(ctx context.Context, r runSpec, mk func(ex *executor.Executor) (func(context.Context) error, error)) (measured, error) {
	return perClientThen(ctx, r, mk, nil)
}

// perClientThen is perClient with a check, if not nil, run once the
// load has ended and before the clients close (on their executors).
func perClientThen(ctx context.Context, r runSpec, mk func(ex *executor.Executor) (func(context.Context) error, error), after func(context.Context, []*executor.Executor) error) (measured, error) {
	cs, err := dialClients(ctx, r.Addr, r.Clients, r.SessionTimeout)
	if err != nil {
		return measured{}, err
	}
	defer cs.close()
	ops := make([]func(context.Context) error, r.Clients)
	for i, ex := range cs.Execs {
		if ops[i], err = mk(ex); err != nil {
			return measured{}, err
		}
	}
	before := cs.Requests.Load()
	res, err := peers.Drive(ctx, peers.Load{Workers: r.Clients, Warmup: r.Warmup, Duration: r.Duration, Done: r.Done,
		Op: func(ctx context.Context, w int) error { return ops[w](ctx) }})
	m := measured{Result: res, Requests: cs.Requests.Load() - before}
	if err == nil && after != nil {
		err = after(ctx, cs.Execs)
	}
	return m, err
}

// lockRun: each client loops Client.Acquire then Release on one directory.
func lockRun(ctx context.Context, r runSpec) (measured, error) {
	return perClient(ctx, r, func(ex *executor.Executor) (func(context.Context) error, error) {
		m, err := lock.NewClient(ex, r.Path)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) error {
			h, err := m.Acquire(ctx)
			if err != nil {
				return err
			}
			return m.Release(ctx, h)
		}, nil
	})
}

// idRun: each client draws IDs from one sequence node with a Generator:
// block 1 is one compare-and-set per ID (seqid.Next), more draws from
// blocks reserved with one compare-and-set each.
func idRun(block int64) func(context.Context, runSpec) (measured, error) {
	return func(ctx context.Context, r runSpec) (measured, error) {
		return perClient(ctx, r, func(ex *executor.Executor) (func(context.Context) error, error) {
			g, err := seqid.NewClient(ex, r.Path, block)
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context) error { _, err := g.Next(ctx); return err }, nil
		})
	}
}

// pipelineRun: one session, r.Outstanding read loops running on its
// executor at once (c.All of c.Loop), each read issued from the previous
// one's continuation: no goroutine per request.
func pipelineRun(ctx context.Context, r runSpec) (measured, error) {
	cs, err := dialClients(ctx, r.Addr, 1, r.SessionTimeout)
	if err != nil {
		return measured{}, err
	}
	defer cs.close()
	ex := cs.Execs[0]
	if err := ensurePath(ctx, ex, r.Path); err != nil {
		return measured{}, err
	}
	clock := task.RealClock()
	start := clock.Now()
	t0, end := start.Add(r.Warmup), start.Add(r.Warmup+r.Duration)
	// Executor goroutine only:
	var lat []time.Duration
	var total int64
	var measuredOps atomic.Int64
	read := func(int) task.Task[int] {
		return func(s *task.Scope, k task.Cont[int]) {
			st := clock.Now()
			task.Run(s, task.Get(r.Path), func(_ task.Data, err error) {
				if err != nil {
					k(0, err)
					return
				}
				e := clock.Now()
				total++
				if !st.Before(t0) {
					lat = append(lat, e.Sub(st))
					if r.Done != nil {
						r.Done(measuredOps.Add(1))
					}
				}
				k(0, nil)
			})
		}
	}
	loops := make([]task.Task[int], r.Outstanding)
	for i := range loops {
		loops[i] = c.Loop(0, func(int) bool { return clock.Now().Before(end) }, read)
	}
	before := cs.Requests.Load()
	// The CPU window opens at the end of the warm-up, as peers.Drive's.
	cpu0 := make(chan time.Duration, 1)
	opened := time.AfterFunc(t0.Sub(clock.Now()), func() { cpu0 <- peers.ProcessCPU() })
	_, err = executor.Await(ctx, ex, c.All(loops...))
	stop := clock.Now()
	if opened.Stop() {
		cpu0 <- peers.ProcessCPU()
	}
	cpu := peers.ProcessCPU() - <-cpu0
	if err != nil {
		return measured{}, err
	}
	// The flow has ended: lat and total are no longer written.
	res := peers.Result{Ops: int64(len(lat)), Total: total, Seconds: stop.Sub(t0).Seconds(), Latency: peers.Summarize(lat), CPU: max(cpu, 0)}
	return measured{Result: res, Requests: cs.Requests.Load() - before}, nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// mwWorkers is how many workers serve the master-worker scenario.
const mwWorkers = 2

func init() {
	register(&scenario{
		Name: "masterworker", Title: "master-worker tasks (recipes/masterworker: submit, assign, execute, status)", Unit: "tasks/s",
		Clients: []int{1, 8}, Run: masterWorkerRun,
	})
}

// masterWorkerRun: one master and mwWorkers workers, each on a session of
// its own, serve; r.Clients clients (sessions of their own) each loop
// Client.Do (submit a task, wait for its status). A worker's handler
// echoes the task's data. An operation is one task done end to end; its
// round trips are everyone's: the clients', the master's and the workers'.
func masterWorkerRun(ctx context.Context, r runSpec) (measured, error) {
	sys, err := masterworker.New(r.Path)
	if err != nil {
		return measured{}, err
	}
	servers, err := dialClients(ctx, r.Addr, 1+mwWorkers, r.SessionTimeout)
	if err != nil {
		return measured{}, err
	}
	defer servers.close()
	if _, err := executor.Await(ctx, servers.Execs[0], sys.Setup()); err != nil {
		return measured{}, fmt.Errorf("setup: %w", err)
	}
	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	serveErr := make([]error, 1+mwWorkers)
	defer func() {
		stop()
		wg.Wait()
	}()
	m, err := sys.Master("m1")
	if err != nil {
		return measured{}, err
	}
	serve := func(i int, f func(context.Context, *executor.Executor) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(sctx, servers.Execs[i]); err != nil && !errors.Is(err, task.ErrCanceled) {
				serveErr[i] = err
			}
		}()
	}
	serve(0, m.Serve)
	for i := 1; i <= mwWorkers; i++ {
		w, err := sys.Worker(fmt.Sprintf("w%d", i), func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
		if err != nil {
			return measured{}, err
		}
		serve(i, w.Serve)
	}
	before := servers.Requests.Load()
	res, err := perClient(ctx, r, func(ex *executor.Executor) (func(context.Context) error, error) {
		cl, err := sys.NewClient(ex, fmt.Sprintf("c%p", ex))
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) error {
			out, err := cl.Do(ctx, []byte("job"))
			if err != nil {
				return err
			}
			return out.Err()
		}, nil
	})
	stop()
	wg.Wait()
	res.Requests += servers.Requests.Load() - before // the master's and workers' share
	if err == nil {
		err = errors.Join(serveErr...)
	}
	return res, err
}

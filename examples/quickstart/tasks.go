package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// tasksChapter: two masters run for mastership; the primary assigns the
// submitted tasks to the workers. One worker takes a task and dies with it
// (its client is killed while the task runs), and so does the primary
// master: the backup takes over, moves the dead worker's tasks back and
// they are done elsewhere. On the embedded server a worker's connection
// drops on the way.
func tasksChapter(ctx context.Context, s *story) error {
	sys, err := masterworker.New(s.root + "/mw")
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	var serving sync.WaitGroup
	defer func() { stop(); serving.Wait() }()
	serve := func(c *process, run func(context.Context, *executor.Executor) error) {
		serving.Add(1)
		go func() { defer serving.Done(); _ = run(sctx, c.ex) }()
	}

	var masters []*masterworker.Master
	var masterClients []*process
	for i := range 2 {
		c, err := s.connect(ctx, fmt.Sprintf("master-%d", i+1))
		if err != nil {
			return err
		}
		m, err := sys.Master(c.name)
		if err != nil {
			return err
		}
		masters = append(masters, m)
		masterClients = append(masterClients, c)
		serve(c, m.Serve)
	}

	// The doomed worker is the last of the pool: it hangs in its first task
	// and is killed there.
	doomed := s.workers[len(s.workers)-1]
	hung := make(chan struct{})
	var workers []*masterworker.Worker
	var hangOnce sync.Once
	doneBy := func(name string) masterworker.Handler {
		return func(j masterworker.Job) task.Task[[]byte] {
			return task.Value([]byte(fmt.Sprintf("%s by %s", j.Data, name)))
		}
	}
	for _, w := range s.workers {
		h := doneBy(w.name)
		if w == doomed {
			h = func(j masterworker.Job) task.Task[[]byte] {
				return func(sc *task.Scope, k task.Cont[[]byte]) {
					hangOnce.Do(func() { close(hung) })
					task.Suspend(sc, k, func(task.Cont[[]byte]) func() { return func() {} })
				}
			}
		}
		wk, err := sys.Worker(w.name, h)
		if err != nil {
			return err
		}
		workers = append(workers, wk)
		serve(w, wk.Serve)
	}
	// Submit once every worker is registered, so the primary spreads the
	// tasks over all of them.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for registered := 0; registered < len(workers); {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		registered = 0
		for _, wk := range workers {
			if wk.Registered() {
				registered++
			}
		}
	}

	cl, err := sys.NewClient(s.admin.ex, "quickstart")
	if err != nil {
		return err
	}
	primary := -1 // the master killed
	names := make([]string, s.o.tasks)
	for i := range names {
		if names[i], err = cl.Submit(ctx, []byte(fmt.Sprintf("task %d", i+1))); err != nil {
			return err
		}
	}
	s.progress("%d tasks submitted", len(names))

	select {
	case <-hung:
		// The primary goes first, so the dead worker's tasks can only be
		// moved back by the backup, once it has taken over.
		for k, m := range masters {
			if m.Primary() {
				s.progress("killing the primary master, %s", masterClients[k].name)
				masterClients[k].stop()
				primary = k
				break
			}
		}
		s.progress("killing %s while it runs a task", doomed.name)
		doomed.stop()
		s.workers = s.workers[:len(s.workers)-1]
	case <-ctx.Done():
		return ctx.Err()
	}

	results := map[string]string{}
	for i, name := range names {
		r, err := cl.Wait(ctx, name)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", name, err)
		}
		results[name] = string(r.Data)
		if r.Failed {
			return fmt.Errorf("%s failed: %s", name, r.Data)
		}
		switch i {
		case len(names) / 3:
			s.fault(s.workers[0], "connection drop", drop(true))
		}
		if (i+1)%(len(names)/4+1) == 0 {
			s.progress("%d/%d tasks done", i+1, len(names))
		}
	}

	statuses, err := executor.AwaitAcrossExpiry(ctx, s.admin.ex, task.Children(sys.StatusRoot()))
	if err != nil {
		return err
	}
	left, err := executor.AwaitAcrossExpiry(ctx, s.admin.ex, task.Children(sys.TasksPath()))
	if err != nil {
		return err
	}
	var reassigned int64
	takeover := false
	for k, m := range masters {
		t, _, r := m.Stats()
		reassigned += r
		takeover = takeover || (primary >= 0 && k != primary && t > 0)
	}
	s.check(len(results) == len(names) && len(statuses.Names) == len(names) && len(left.Names) == 0,
		"tasks: %d submitted, %d done, one status each, none left unassigned", len(names), len(results))
	s.check(reassigned > 0, "a worker died holding a task: %d task(s) moved back and done by another worker", reassigned)
	s.check(takeover, "primary master killed (master-%d) and the backup took over", primary+1)
	return nil
}

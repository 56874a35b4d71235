// Command masterworker runs the master-worker recipe end to end: two
// masters (a primary and a backup), a few workers and a client, each with
// its own ZooKeeper session and executor. The client submits tasks from
// several goroutines and waits for each status; a third of the way
// through, the primary master and one worker crash (their sessions are
// closed). The backup takes over, the dead worker's tasks are moved back
// and done by the others. At the end it checks that every task was
// answered with its own result, that each has exactly one status and
// that nothing is left queued or assigned, prints a summary, and exits 1
// if a check failed.
//
//	go run ./examples/masterworker                  # embedded in-memory ZooKeeper (fakezk)
//	go run ./examples/masterworker -zk host:2181    # a real server or ensemble
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

type options struct {
	servers string // -zk
	seed    uint64
	workers int
	tasks   int
	timeout time.Duration
}

func parse(args []string, out io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("masterworker", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.servers, "zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist); empty runs an embedded fakezk")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the embedded fakezk")
	fs.IntVar(&o.workers, "workers", 3, "workers, each with its own session (at least 2: one crashes)")
	fs.IntVar(&o.tasks, "tasks", 60, "tasks the client submits")
	fs.DurationVar(&o.timeout, "timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.workers < 2 || o.tasks < 3 {
		return nil, fmt.Errorf("-workers must be at least 2 and -tasks at least 3")
	}
	return o, nil
}

func run(ctx context.Context, args []string, out io.Writer) (err error) {
	o, err := parse(args, out)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	// srv is the embedded server, nil when -zk names a real one; there the
	// example's nodes go under a root of their own, apart from other runs,
	// and are deleted at the end.
	var srv *fakezk.Server
	where, root := "ZooKeeper at "+o.servers, fmt.Sprintf("/masterworker-%x", rand.Uint64())
	if o.servers == "" {
		srv = fakezk.New(fakezk.Config{Seed: o.seed})
		defer srv.Close()
		where, root = fmt.Sprintf("embedded ZooKeeper (fakezk), seed %d", o.seed), "/masterworker"
	}
	fmt.Fprintf(out, "%s, 2 masters, %d workers, %d tasks, root %s\n", where, o.workers, o.tasks, root)
	// The cleaner, the run's first session and one no fault touches,
	// deletes the run's nodes at the end, whatever happened: deferred
	// first, cleanUp runs last, once every other process has stopped.
	cleaner, err := start(ctx, srv, o.servers, "cleaner")
	if err != nil {
		return err
	}
	defer cleaner.stop()
	defer func() { err = cleanUp(ctx, cleaner.ex, root, err, out) }()

	var procs []*process
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	var serving sync.WaitGroup
	sctx, stopServing := context.WithCancel(ctx)
	defer func() {
		stopServing()
		serving.Wait()
	}()
	// connect starts a participant; crashing it is stop.
	connect := func(name string) (*process, error) {
		p, err := start(ctx, srv, o.servers, name)
		if err == nil {
			procs = append(procs, p)
		}
		return p, err
	}
	// serve runs a master's or a worker's Serve until the end, or until
	// its node crashes.
	serve := func(f func(context.Context) error) {
		serving.Add(1)
		go func() { defer serving.Done(); _ = f(sctx) }()
	}

	sys, err := masterworker.New(root)
	if err != nil {
		return err
	}
	var masters []*masterworker.Master
	var masterNodes []*process
	for i := range 2 {
		n, err := connect(fmt.Sprintf("master-%d", i+1))
		if err != nil {
			return err
		}
		m, err := sys.Master(n.name)
		if err != nil {
			return err
		}
		masters, masterNodes = append(masters, m), append(masterNodes, n)
		serve(func(ctx context.Context) error { return m.Serve(ctx, n.ex) })
	}
	// The handler: the result is the data reversed. It counts its runs,
	// which may exceed the tasks (a task whose worker crashed after
	// running it is run again), while the statuses may not.
	var runs atomic.Int64
	reverse := func(j masterworker.Job) task.Task[[]byte] {
		runs.Add(1)
		b := []byte(string(j.Data))
		for i, k := 0, len(b)-1; i < k; i, k = i+1, k-1 {
			b[i], b[k] = b[k], b[i]
		}
		return task.Value(b)
	}
	var workerNodes []*process
	for i := range o.workers {
		n, err := connect(fmt.Sprintf("worker-%d", i+1))
		if err != nil {
			return err
		}
		w, err := sys.Worker(n.name, reverse)
		if err != nil {
			return err
		}
		workerNodes = append(workerNodes, n)
		serve(func(ctx context.Context) error { return w.Serve(ctx, n.ex) })
	}
	cn, err := connect("client-1")
	if err != nil {
		return err
	}
	client, err := sys.NewClient(cn.ex, cn.name)
	if err != nil {
		return err
	}

	// Submit from 4 goroutines; crash the primary and worker-1 once a
	// third of the tasks are answered.
	var (
		mu      sync.Mutex
		results = map[string]string{}
		errs    []error
		crashed []string
		once    sync.Once
		wg      sync.WaitGroup
	)
	crash := func() {
		for i, m := range masters {
			if m.Primary() {
				masterNodes[i].stop()
				crashed = append(crashed, m.ID()+" (primary)")
				break
			}
		}
		workerNodes[0].stop()
		crashed = append(crashed, "worker-1")
		fmt.Fprintf(out, "  crashed: %s\n", strings.Join(crashed, ", "))
	}
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := g; k < o.tasks; k += 4 {
				data := fmt.Sprintf("task %03d", k)
				res, err := client.Do(ctx, []byte(data))
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", data, err))
				} else {
					results[data] = string(res.Data)
				}
				n := len(results)
				mu.Unlock()
				if err != nil {
					return
				}
				if n == o.tasks/3 {
					once.Do(crash)
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintf(out, "  %d tasks answered, handler runs: %d\n", len(results), runs.Load())

	// Judge, through the client's session.
	var failed []string
	check := func(ok bool, what string) {
		mark := "ok:"
		if !ok {
			mark = "FAILED:"
			failed = append(failed, what)
		}
		fmt.Fprintln(out, "  "+mark, what)
	}
	right := len(results) == o.tasks
	for data, got := range results {
		want := []rune(data)
		for i, k := 0, len(want)-1; i < k; i, k = i+1, k-1 {
			want[i], want[k] = want[k], want[i]
		}
		right = right && got == string(want)
	}
	check(right, "every task answered with its own result")
	statuses, err := executor.Await(ctx, cn.ex, task.Children(sys.StatusRoot()))
	if err != nil {
		return err
	}
	check(len(statuses.Names) == o.tasks, fmt.Sprintf("one status per task (%d statuses)", len(statuses.Names)))
	queued, err := executor.Await(ctx, cn.ex, task.Children(sys.TasksPath()))
	if err != nil {
		return err
	}
	left := len(queued.Names)
	dirs, err := executor.Await(ctx, cn.ex, task.Children(sys.AssignRoot()))
	if err != nil {
		return err
	}
	for _, d := range dirs.Names {
		l, err := executor.Await(ctx, cn.ex, task.Children(sys.AssignPath(d)))
		if err != nil && !errors.Is(err, task.ErrNoNode) {
			return err
		}
		left += len(l.Names)
	}
	check(left == 0, "nothing left queued or assigned")
	primaries := 0
	for _, m := range masters {
		if n, _, _ := m.Stats(); n > 0 {
			primaries++
		}
	}
	check(len(crashed) == 2 && primaries == 2, "the backup master took over from the crashed primary")
	check(backgroundErrors.Load() == 0, fmt.Sprintf("no background flow failed (%d)", backgroundErrors.Load()))
	if len(failed) > 0 {
		return fmt.Errorf("%d check(s) failed", len(failed))
	}
	return nil // cleanUp says OK
}

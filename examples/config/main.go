// Command config shows a worker that reloads itself when its
// configuration changes. An admin session writes the configuration
// directory (entries greeting and threads) in one multi (config.Update)
// and one entry at a time under the invalid marker (config.UpdateMarked);
// a worker on another session runs with config.Reload: each new version
// stops the run of the previous one and starts a new run, which reports
// the version it applied in an "applied" node. On the embedded server, the
// worker is cut off while the admin writes a version: the version is
// delivered after the reconnect. It checks that the worker applied every
// version it had to and never ran twice at once, prints a summary, and
// exits 1 if a check failed.
//
//	go run ./examples/config                 # embedded in-memory ZooKeeper (fakezk)
//	go run ./examples/config -zk host:2181   # a real server or ensemble
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/config"
	"github.com/zkflow/zkflow/task"
)

type options struct {
	servers string // -zk
	seed    uint64
	timeout time.Duration
}

func parse(args []string, out io.Writer) (*options, error) {
	o := new(options)
	fs := flag.NewFlagSet("config", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.servers, "zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist); empty runs an embedded fakezk")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the embedded fakezk")
	fs.DurationVar(&o.timeout, "timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.timeout <= 0 {
		return o, fmt.Errorf("-timeout must be positive")
	}
	return o, nil
}

// worker is the component the Reloader runs: one run per version.
type worker struct {
	out     io.Writer
	applied string // the node a run writes its version to

	mu              sync.Mutex
	running, maxRun int
	runs            int
	stopped         []string // why each run ended
}

// apply starts a run with s: it reports the version it applied, then
// serves until its scope is canceled (a new version, expiry, stop).
func (w *worker) apply(s config.Snapshot) task.Task[task.Unit] {
	version := fmt.Sprintf("greeting=%s threads=%s", s.Values["greeting"], s.Values["threads"])
	report := c.Retry(task.Set(w.applied, []byte(version), task.AnyVersion), c.Policy{})
	return func(sc *task.Scope, k task.Cont[task.Unit]) {
		w.mu.Lock()
		w.running++
		w.runs++
		w.maxRun = max(w.maxRun, w.running)
		w.mu.Unlock()
		fmt.Fprintf(w.out, "  worker: run %d starts with %s\n", w.runs, version)
		sc.OnDone(func(err error) {
			w.mu.Lock()
			w.running--
			w.stopped = append(w.stopped, err.Error())
			w.mu.Unlock()
			fmt.Fprintf(w.out, "  worker: run with %s stops: %v\n", version, err)
		})
		task.Run(sc, report, func(_ task.Stat, err error) {
			if err != nil {
				k(task.Unit{}, err)
				return
			}
			task.Suspend(sc, k, func(task.Cont[task.Unit]) func() { return nil }) // serve until canceled
		})
	}
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
	where, root := "ZooKeeper at "+o.servers, fmt.Sprintf("/config-example-%x", rand.Uint64())
	if o.servers == "" {
		srv = fakezk.New(fakezk.Config{Seed: o.seed})
		defer srv.Close()
		where, root = fmt.Sprintf("embedded ZooKeeper (fakezk), seed %d", o.seed), "/config-example"
	}
	dir, applied := root+"/config", root+"/applied"
	fmt.Fprintf(out, "%s, configuration %s\n", where, dir)
	// The cleaner, the run's first session and one no fault touches,
	// deletes the run's nodes at the end, whatever happened: deferred
	// first, cleanUp runs last, once every other process has stopped.
	cleaner, err := start(ctx, srv, o.servers)
	if err != nil {
		return err
	}
	defer cleaner.stop()
	defer func() { err = cleanUp(ctx, cleaner.ex, root, err, out) }()

	admin, err := start(ctx, srv, o.servers)
	if err != nil {
		return err
	}
	defer admin.stop()
	ws, err := start(ctx, srv, o.servers)
	if err != nil {
		return err
	}
	defer ws.stop()
	setup := c.Seq(task.Create(root, nil, task.Persistent), c.Seq(task.Create(dir, nil, task.Persistent),
		c.Seq(task.Create(applied, nil, task.Persistent), config.Update(dir, version("hello", 2)))))
	if _, err := executor.Await(ctx, admin.ex, setup); err != nil {
		return err
	}
	var checks Checks
	check := checks.Check

	fmt.Fprintln(out, "1. the worker starts with the first version")
	w := &worker{out: out, applied: applied}
	r, err := executor.Await(ctx, ws.ex, config.Reload(dir, config.DirOptions{Marker: true}, w.apply))
	if err != nil {
		return err
	}
	if err := awaitApplied(ctx, admin.ex, applied, "greeting=hello threads=2"); err != nil {
		return err
	}

	fmt.Fprintln(out, "2. the admin updates both entries in one multi")
	if _, err := executor.AwaitAcrossExpiry(ctx, admin.ex, config.Update(dir, version("bonjour", 4))); err != nil {
		return err
	}
	if err := awaitApplied(ctx, admin.ex, applied, "greeting=bonjour threads=4"); err != nil {
		return err
	}

	fmt.Fprintln(out, "3. the admin updates one entry at a time under the invalid marker")
	if _, err := executor.AwaitAcrossExpiry(ctx, admin.ex, config.UpdateMarked(dir, version("hallo", 8))); err != nil {
		return err
	}
	if err := awaitApplied(ctx, admin.ex, applied, "greeting=hallo threads=8"); err != nil {
		return err
	}

	want := "greeting=hallo threads=8"
	if srv != nil {
		fmt.Fprintln(out, "4. the worker is cut off for 1s while the admin writes a version")
		srv.Partition(ws.conn.(*fakezk.Conn), time.Second, false)
		if _, err := executor.AwaitAcrossExpiry(ctx, admin.ex, config.Update(dir, version("ciao", 16))); err != nil {
			return err
		}
		want = "greeting=ciao threads=16"
		if err := awaitApplied(ctx, admin.ex, applied, want); err != nil {
			return err
		}
		fmt.Fprintln(out, "  the version written while the worker was cut off was applied after the reconnect")
	}
	if _, err := executor.Await(ctx, ws.ex, r.Stop()); err != nil {
		return err
	}
	d, err := executor.Await(ctx, admin.ex, task.Get(applied))
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	check(string(d.Data) == want, "the last version applied is the last written: %s", d.Data)
	check(w.maxRun == 1, "at most one run at a time (most at once: %d)", w.maxRun)
	reloaded := 0
	for _, s := range w.stopped {
		if s == config.ErrReloaded.Error() {
			reloaded++
		}
	}
	check(reloaded == w.runs-1 && w.running == 0, "each run but the last was stopped by the next version (%d of %d runs), the last by Stop", reloaded, w.runs)

	checks.Check(backgroundErrors.Load() == 0, "no background flow failed (%d)", backgroundErrors.Load())
	return checks.Report(out)
}

func version(greeting string, threads int) map[string][]byte {
	return map[string][]byte{"greeting": []byte(greeting), "threads": []byte(fmt.Sprint(threads))}
}

// awaitApplied waits, with data watches on ex's session, until path holds
// want.
func awaitApplied(ctx context.Context, ex *executor.Executor, path, want string) error {
	for {
		dw, err := executor.AwaitAcrossExpiry(ctx, ex, task.GetW(path))
		if err != nil {
			return fmt.Errorf("waiting for %q: %w", want, err)
		}
		if string(dw.Data.Data) == want {
			return nil
		}
		if _, err := executor.AwaitAcrossExpiry(ctx, ex, dw.Watch.Wait()); err != nil && !errors.Is(err, task.ErrSessionExpired) {
			return fmt.Errorf("waiting for %q: %w", want, err)
		}
	}
}

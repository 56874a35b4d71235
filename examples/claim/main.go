// Command claim runs the claim-a-job recipe of claim.go, written as a
// flow: workers, each with a ZooKeeper session and an executor of its
// own, race to claim every job, and each job gets one owner. Worker 1
// claims the first job before the others start, so its create is
// applied; on the embedded server that create's reply is lost: the recipe
// creates again, gets NodeExists, and finds the node is its own (the
// program checks that it did, and prints it). Then every worker races for
// every job. The program checks that each job has exactly one claimer and
// that its node holds that claimer's name, releases every job, checks the
// nodes are gone, and prints OK (or exits 1).
//
//	go run ./examples/claim             # embedded in-memory ZooKeeper (fakezk)
//	go run ./examples/claim -zk host:2181
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter"
)

func main() {
	// Ctrl-C ends the run's context: the run stops and still deletes its
	// nodes; a second Ctrl-C kills it at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	context.AfterFunc(ctx, stop)
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage is printed
		}
		fmt.Fprintln(os.Stderr, "claim:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("claim", flag.ContinueOnError)
	fs.SetOutput(out)
	servers := fs.String("zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist); empty runs on an embedded fakezk")
	seed := fs.Uint64("seed", 1, "seed of the embedded server")
	nWorkers := fs.Int("workers", 3, "workers, each with its own session")
	nJobs := fs.Int("jobs", 5, "jobs to claim")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *nWorkers < 1 || *nJobs < 1 || fs.NArg() > 0 {
		return errors.New("want -workers >= 1, -jobs >= 1 and no arguments")
	}
	// -zk is a connect string, as Curator's and kazoo's:
	// "host:port[,host:port...][/root]". Its root (ZooKeeper's chroot, a
	// node that must exist) is every session's "/": every path is under it.
	var cfg zkadapter.Config
	if *servers != "" {
		var err error
		if cfg.Servers, cfg.Root, err = zkadapter.ParseConnectString(*servers); err != nil {
			return fmt.Errorf("-zk %q: %w", *servers, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	// The wiring: a ZooKeeper (embedded or real), and per worker a
	// session and an executor running on a goroutine of its own.
	var srv *fakezk.Server
	root := fmt.Sprintf("/claim-%016x", rand.Uint64()) // runs on a shared server do not mix
	if *servers == "" {
		srv = fakezk.New(fakezk.Config{Seed: *seed})
		defer srv.Close()
		root = "/claim"
	}
	runCtx, stop := context.WithCancel(context.Background())
	var running sync.WaitGroup
	defer running.Wait()
	defer stop()
	workers := make([]*executor.Executor, *nWorkers)
	var fault *loseFirstCreate // worker 1's connection on the embedded server
	for i := range workers {
		var conn task.Conn
		if srv != nil {
			conn = srv.Connect(fakezk.ConnConfig{})
			if i == 0 {
				fault = &loseFirstCreate{Conn: conn.(*fakezk.Conn), out: out}
				conn = fault
			}
		} else {
			// Dial gets a bound of its own: a wrong address fails within seconds,
			// not when the whole run's context ends.
			dctx, dcancel := context.WithTimeout(ctx, 15*time.Second)
			zc, err := zkadapter.Dial(dctx, cfg)
			dcancel()
			if err != nil {
				return err
			}
			conn = zc
		}
		ex, err := executor.New(executor.Config{Conn: conn})
		if err != nil {
			conn.Close()
			return err
		}
		workers[i] = ex
		running.Go(func() { _ = ex.Run(runCtx) })
	}
	fmt.Fprintf(out, "%d workers race for %d jobs under %s\n", *nWorkers, *nJobs, root)
	err := race(ctx, out, workers, root, *nJobs, fault)
	// The clean-up, on success and on failure alike: every session but the
	// last worker's closes (their ephemeral claims go with them), which
	// then deletes whatever the run left under root (nothing, when race
	// got as far as deleting it).
	for _, ex := range workers[:len(workers)-1] {
		ex.Close()
	}
	return cleanUp(ctx, workers[len(workers)-1], root, err, out)
}

// race has every worker claim every job, checks the claims (and, when
// fault is not nil, that worker 1 found the node of its lost create its
// own), and releases.
func race(ctx context.Context, out io.Writer, workers []*executor.Executor, root string, nJobs int, fault *loseFirstCreate) error {
	admin := workers[len(workers)-1]
	if _, err := executor.Await(ctx, admin, task.Create(root, nil, task.Persistent)); err != nil && !errors.Is(err, task.ErrNodeExists) {
		return err
	}
	owners := make([][]int, nJobs) // the workers that said "mine", per job
	var mu sync.Mutex
	claim := func(w, j int) error {
		job := fmt.Sprintf("%s/job-%d", root, j)
		mine, err := executor.Await(ctx, workers[w], task.Flow(func(f *task.F) (bool, error) {
			return Claim(f, job, fmt.Appendf(nil, "worker %d", w+1))
		}))
		if err != nil {
			return fmt.Errorf("worker %d, %s: %w", w+1, job, err)
		}
		if mine {
			mu.Lock()
			owners[j] = append(owners[j], w)
			mu.Unlock()
		}
		return nil
	}
	// Worker 1 claims job 0 alone, before the others start: its create is
	// applied (and on the embedded server its reply lost). Then every
	// worker races for every job, worker 1 for the others.
	if err := claim(0, 0); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(workers))
	for w := range workers {
		wg.Go(func() {
			for j := range nJobs {
				if w == 0 && j == 0 {
					continue // claimed above
				}
				if errs[w] = claim(w, j); errs[w] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if fault != nil {
		// The lost reply settled: worker 1's create of job 0 was applied,
		// so the node is its own, and the recipe must have said "mine".
		lost, job := fault.lostPath(), root+"/job-0"
		if lost != job {
			return fmt.Errorf("worker 1's first applied create: %q, want %s (its reply lost): the scenario did not happen", lost, job)
		}
		if mine := slices.Contains(owners[0], 0); !mine || len(owners[0]) != 1 {
			return fmt.Errorf("%s: worker 1's create was applied and its reply lost, yet worker 1 said mine: %v (%d workers said it)", job, mine, len(owners[0]))
		}
		fmt.Fprintf(out, "%s: worker 1 created again after the lost reply, got NodeExists, and found the node its own\n", job)
	}
	for j, ws := range owners {
		job := fmt.Sprintf("%s/job-%d", root, j)
		if len(ws) != 1 {
			return fmt.Errorf("%s: claimed by %d workers, want 1", job, len(ws))
		}
		d, err := executor.Await(ctx, admin, task.Get(job))
		if err != nil {
			return err
		}
		if want := fmt.Sprintf("worker %d", ws[0]+1); string(d.Data) != want {
			return fmt.Errorf("%s: %s says mine, the node holds %q", job, want, d.Data)
		}
		fmt.Fprintf(out, "%s: worker %d\n", job, ws[0]+1)
		if _, err := executor.Await(ctx, workers[ws[0]], task.Flow(func(f *task.F) (task.Unit, error) {
			return task.Unit{}, Release(f, job)
		})); err != nil {
			return err
		}
		if st, err := executor.Await(ctx, admin, task.Exists(job)); err != nil || st != nil {
			return fmt.Errorf("%s after its release: %v, %v; want no node", job, st, err)
		}
	}
	if _, err := executor.Await(ctx, admin, task.Delete(root, -1)); err != nil {
		return err
	}
	return nil // cleanUp says OK
}

// loseFirstCreate loses the reply of the first create of a job it sends
// that the server applies: the recipe gets connection loss, and the
// connection drops and reconnects to the same session, as when a
// connection breaks with the request in flight. (A create refused
// meanwhile, the job another worker's, is answered as it is.) lostPath
// says which job's reply it lost, if it has.
type loseFirstCreate struct {
	*fakezk.Conn
	out  io.Writer
	mu   sync.Mutex
	lost string // the path of the create whose reply was lost
}

func (c *loseFirstCreate) lostPath() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lost
}

func (c *loseFirstCreate) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	cr, isCreate := req.(*task.CreateRequest)
	if !isCreate || !strings.Contains(cr.Path, "/job-") || c.lostPath() != "" {
		c.Conn.Do(req, done, watch)
		return
	}
	var drop atomic.Bool
	c.Conn.Do(req, func(resp task.Response) {
		c.mu.Lock()
		first := resp.Err == nil && c.lost == ""
		if first {
			c.lost = cr.Path
		}
		c.mu.Unlock()
		if !first {
			done(resp)
			return
		}
		fmt.Fprintf(c.out, "fault: worker 1's create of %s: applied, its reply lost\n", cr.Path)
		drop.Store(true)
		done(task.Response{Err: task.ErrConnectionLoss})
	}, watch)
	if drop.Load() {
		c.Server().Drop(c.Conn, true)
	}
}

// cleanupTimeout bounds the clean-up at the end of a run (cleanUp), which
// runs even when the run's context has ended.
const cleanupTimeout = 5 * time.Second

// cleanUp ends a run, on success and on failure alike: it deletes root
// and every node under it on ex's session (Executor.DeleteAll), within
// cleanupTimeout of its own, and says so if there was anything to
// delete, so that a run on a real server leaves nothing behind. It
// returns runErr joined with the clean-up's error; when both are nil it
// prints the run's last line, OK. Call it once every other session of
// the run has closed (their ephemeral nodes are gone with them), so that
// no process creates again what it deletes.
func cleanUp(ctx context.Context, ex *executor.Executor, root string, runErr error, out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	n, err := ex.DeleteAll(ctx, root)
	switch {
	case err != nil:
		fmt.Fprintf(out, "clean-up FAILED: %v (%d nodes deleted, the rest left under %s)\n", err, n, root)
		return errors.Join(runErr, fmt.Errorf("clean-up of %s: %w", root, err))
	case n > 0:
		fmt.Fprintf(out, "clean-up: deleted %s and the %d nodes under it\n", root, n-1)
	}
	if runErr == nil {
		fmt.Fprintln(out, "OK")
	}
	return runErr
}

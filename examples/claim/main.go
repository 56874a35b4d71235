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
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
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
	servers := fs.String("zk", "", "ZooKeeper servers, host:port[,host:port...]; empty runs on an embedded fakezk")
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
			zc, err := zkadapter.Dial(dctx, zkadapter.Config{Servers: strings.Split(*servers, ",")})
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
	return race(ctx, out, workers, root, *nJobs, fault)
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
	fmt.Fprintln(out, "OK")
	return nil
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

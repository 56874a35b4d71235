// Command flowcounter runs a compare-and-set counter written as a flow
// (counter.go): workers, each with a ZooKeeper session and an executor of
// its own, increment one counter node at once. On the embedded server the
// first write of worker 1 is applied and its reply lost: that increment's
// outcome is unknown to it. The program checks that no two increments
// returned the same value and that the counter ends between the
// increments acknowledged and those plus the unknown ones, and prints OK
// (or exits 1).
//
//	go run ./examples/flowcounter             # embedded in-memory ZooKeeper (fakezk)
//	go run ./examples/flowcounter -zk host:2181
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
	"strconv"
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
		fmt.Fprintln(os.Stderr, "flowcounter:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("flowcounter", flag.ContinueOnError)
	fs.SetOutput(out)
	servers := fs.String("zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist); empty runs on an embedded fakezk")
	seed := fs.Uint64("seed", 1, "seed of the embedded server")
	nWorkers := fs.Int("workers", 3, "workers, each with its own session")
	rounds := fs.Int("rounds", 20, "increments per worker")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *nWorkers < 1 || *rounds < 1 || fs.NArg() > 0 {
		return errors.New("want -workers >= 1, -rounds >= 1 and no arguments")
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
	path := fmt.Sprintf("/flowcounter-%016x", rand.Uint64()) // runs on a shared server do not mix
	if *servers == "" {
		srv = fakezk.New(fakezk.Config{Seed: *seed})
		defer srv.Close()
		path = "/flowcounter"
	}
	runCtx, stop := context.WithCancel(context.Background())
	var running sync.WaitGroup
	defer running.Wait()
	defer stop()
	workers := make([]*executor.Executor, *nWorkers)
	for i := range workers {
		var conn task.Conn
		if srv != nil {
			conn = srv.Connect(fakezk.ConnConfig{})
			if i == 0 {
				conn = &loseFirstSet{Conn: conn.(*fakezk.Conn), out: out}
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
	fmt.Fprintf(out, "%d workers x %d increments of %s\n", *nWorkers, *rounds, path)
	err := count(ctx, out, workers, path, *rounds)
	// The clean-up, on success and on failure alike: every session but
	// worker 1's closes, which then deletes the counter if the run left
	// it (count deletes it when all went well).
	for _, ex := range workers[1:] {
		ex.Close()
	}
	return cleanUp(ctx, workers[0], path, err, out)
}

// count has every worker increment the counter rounds times, and checks.
func count(ctx context.Context, out io.Writer, workers []*executor.Executor, path string, rounds int) error {
	if _, err := executor.Await(ctx, workers[0], task.Create(path, []byte("0"), task.Persistent)); err != nil {
		return err
	}
	var mu sync.Mutex
	returned := map[int64]int{} // value returned -> worker
	unknown := 0
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for w, ex := range workers {
		wg.Go(func() {
			for range rounds {
				v, err := executor.Await(ctx, ex, task.Flow(func(f *task.F) (int64, error) { return Increment(f, path, 1) }))
				mu.Lock()
				switch other, dup := returned[v]; {
				case errors.Is(err, ErrOutcomeUnknown):
					unknown++
				case err != nil:
					errs[w] = err
				case dup:
					errs[w] = fmt.Errorf("workers %d and %d both got %d", other+1, w+1, v)
				default:
					returned[v] = w
				}
				mu.Unlock()
				if errs[w] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	d, err := executor.Await(ctx, workers[0], task.Get(path))
	if err != nil {
		return err
	}
	v, err := strconv.ParseInt(string(d.Data), 10, 64)
	if err != nil {
		return fmt.Errorf("counter %q: %w", d.Data, err)
	}
	fmt.Fprintf(out, "counter %d: %d increments acknowledged, %d unknown\n", v, len(returned), unknown)
	if acked := int64(len(returned)); v < acked || v > acked+int64(unknown) {
		return fmt.Errorf("counter %d, want %d acknowledged increments plus at most %d unknown", v, acked, unknown)
	}
	for r := range returned {
		if r < 1 || r > v {
			return fmt.Errorf("an increment returned %d, outside 1..%d", r, v)
		}
	}
	if _, err := executor.Await(ctx, workers[0], task.Delete(path, -1)); err != nil {
		return err
	}
	return nil // cleanUp says OK
}

// loseFirstSet loses the reply of the first write it sends that the
// server applies: the recipe gets connection loss, and the connection
// drops and reconnects to the same session, as when a connection breaks
// with the request in flight. (A write refused meanwhile, its version
// taken by another worker, is answered as it is.)
type loseFirstSet struct {
	*fakezk.Conn
	out  io.Writer
	lost atomic.Bool
}

func (c *loseFirstSet) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if _, isSet := req.(*task.SetDataRequest); !isSet || c.lost.Load() {
		c.Conn.Do(req, done, watch)
		return
	}
	var drop atomic.Bool
	c.Conn.Do(req, func(resp task.Response) {
		if resp.Err != nil || !c.lost.CompareAndSwap(false, true) {
			done(resp)
			return
		}
		fmt.Fprintln(c.out, "fault: worker 1's first applied write: its reply lost")
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

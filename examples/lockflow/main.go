// Command lockflow runs ZooKeeper's lock recipe written as a flow
// (lock.go): workers, each with a ZooKeeper session and an executor of
// its own, take the lock in turn and, holding it, add one to a counter
// node by a plain read and an unconditional write, which two holders at
// once would make lose an update. On the embedded server the first lock
// create of worker 1 is applied and its reply lost: the recipe finds its
// node by its guid. A Lock that ends early (a deadline, a cancel) deletes
// its node, by a flow of its own once its scope has ended (lock.go,
// abandon). The program checks the counter ends at workers x rounds and
// the lock directory empty, and prints OK (or exits 1).
//
//	go run ./examples/lockflow             # embedded in-memory ZooKeeper (fakezk)
//	go run ./examples/lockflow -zk host:2181
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
	"strings"
	"sync"
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
		fmt.Fprintln(os.Stderr, "lockflow:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("lockflow", flag.ContinueOnError)
	fs.SetOutput(out)
	servers := fs.String("zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist); empty runs on an embedded fakezk")
	seed := fs.Uint64("seed", 1, "seed of the embedded server")
	nWorkers := fs.Int("workers", 3, "workers, each with its own session")
	rounds := fs.Int("rounds", 10, "times each worker takes the lock")
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
	root := fmt.Sprintf("/lockflow-%016x", rand.Uint64()) // runs on a shared server do not mix
	if *servers == "" {
		srv = fakezk.New(fakezk.Config{Seed: *seed})
		defer srv.Close()
		root = "/lockflow"
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
				conn = &loseFirstCreate{Conn: conn.(*fakezk.Conn), out: out}
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
		ex, err := executor.New(executor.Config{Conn: conn, Seed: *seed*100 + uint64(i)})
		if err != nil {
			conn.Close()
			return err
		}
		workers[i] = ex
		running.Go(func() { _ = ex.Run(runCtx) })
	}
	fmt.Fprintf(out, "%d workers x %d rounds under %s\n", *nWorkers, *rounds, root)
	err := count(ctx, out, workers, root, *rounds)
	// The clean-up, on success and on failure alike: every session but
	// worker 1's closes (their lock nodes go with them), which then
	// deletes whatever the run left under root (nothing, when count got
	// as far as deleting it).
	for _, ex := range workers[1:] {
		ex.Close()
	}
	return cleanUp(ctx, workers[0], root, err, out)
}

// count has every worker add one to root/count rounds times under the
// lock root/lock, and checks the sum.
func count(ctx context.Context, out io.Writer, workers []*executor.Executor, root string, rounds int) error {
	dir, counter := root+"/lock", root+"/count"
	for _, p := range []string{root, dir, counter} {
		if _, err := executor.Await(ctx, workers[0], task.Create(p, []byte("0"), task.Persistent)); err != nil {
			return err
		}
	}
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for w, ex := range workers {
		wg.Go(func() {
			for range rounds {
				_, errs[w] = executor.Await(ctx, ex, task.Flow(func(f *task.F) (task.Unit, error) {
					node, err := Lock(f, dir)
					if err != nil {
						return task.Unit{}, err // Lock leaves no node behind
					}
					d, err := retry(f, task.Get(counter))
					if err == nil {
						n, _ := strconv.Atoi(string(d.Data))
						_, err = retry(f, task.Set(counter, []byte(strconv.Itoa(n+1)), task.AnyVersion))
					}
					// Unlock, also after a failed section: once the flow's
					// scope has ended (ctx's end cancels it), Unlock leaves
					// the delete to a flow of its own.
					if uerr := Unlock(f, node); err == nil {
						err = uerr
					}
					return task.Unit{}, err
				}))
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
	d, err := executor.Await(ctx, workers[0], task.Get(counter))
	if err != nil {
		return err
	}
	kids, err := executor.Await(ctx, workers[0], task.Children(dir))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "counter %s, %d lock nodes left\n", d.Data, len(kids.Names))
	if want := strconv.Itoa(len(workers) * rounds); string(d.Data) != want || len(kids.Names) != 0 {
		return fmt.Errorf("want counter %s and no lock node left", want)
	}
	for _, p := range []string{counter, dir, root} {
		if _, err := executor.Await(ctx, workers[0], task.Delete(p, -1)); err != nil {
			return err
		}
	}
	return nil // cleanUp says OK
}

// loseFirstCreate sends the first create of a lock node and loses its
// reply: the recipe gets connection loss, and the connection drops and
// reconnects to the same session, as when a connection breaks with the
// request in flight.
type loseFirstCreate struct {
	*fakezk.Conn
	out  io.Writer
	once sync.Once
}

func (c *loseFirstCreate) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	cr, isCreate := req.(*task.CreateRequest)
	first := false
	if isCreate && strings.Contains(cr.Path, "-lock-") {
		c.once.Do(func() { first = true })
	}
	if !first {
		c.Conn.Do(req, done, watch)
		return
	}
	c.Conn.Do(req, func(resp task.Response) {
		fmt.Fprintf(c.out, "fault: worker 1's create of %s: its reply (%q, error %v) lost\n", cr.Path, resp.Path, resp.Err)
		done(task.Response{Err: task.ErrConnectionLoss})
	}, watch)
	c.Server().Drop(c.Conn, true)
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

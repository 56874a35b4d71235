// Command quickstart shows the library's main job in one run: a pool of
// workers, each with its own ZooKeeper session and executor, draws unique
// IDs concurrently from one sequence node by compare-and-set, while faults
// are injected (connection losses with the write applied or not, a session
// expiry). At the end it checks that no ID was handed out twice and that
// the node is at or above every ID issued, prints a summary, and exits 1 if
// a check failed.
//
//	go run ./examples/quickstart                  # embedded in-memory ZooKeeper (fakezk)
//	go run ./examples/quickstart -zk host:2181    # a real server or ensemble
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

type options struct {
	zk      string
	workers int
	ids     int
	seed    uint64
	timeout time.Duration
}

func parse(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.zk, "zk", "", "ZooKeeper servers, host:port[,host:port...]; empty runs on an embedded fakezk")
	fs.IntVar(&o.workers, "workers", 4, "concurrent workers, each with its own session")
	fs.IntVar(&o.ids, "ids", 250, "IDs each worker draws")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the embedded server's scheduling and of the fault schedule")
	fs.DurationVar(&o.timeout, "timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.workers < 1 || o.ids < 1 {
		return o, fmt.Errorf("-workers and -ids must be at least 1")
	}
	return o, nil
}

// worker is one client: a session, the executor that runs its chains, and
// the IDs it drew.
type worker struct {
	conn task.Conn
	ex   *executor.Executor
	ids  []int64
}

func run(ctx context.Context, args []string, out io.Writer) error {
	o, err := parse(args, out)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	var srv *fakezk.Server
	path := "/quickstart/ids"
	if o.zk == "" {
		srv = fakezk.New(fakezk.Config{Seed: o.seed})
		fmt.Fprintf(out, "embedded ZooKeeper (fakezk), seed %d, %d workers x %d IDs\n", o.seed, o.workers, o.ids)
	} else {
		// A fresh node per run, so runs against a shared server do not mix.
		path = fmt.Sprintf("/quickstart/ids-%016x", rand.Uint64())
		fmt.Fprintf(out, "ZooKeeper at %s, %d workers x %d IDs, node %s\n", o.zk, o.workers, o.ids, path)
	}

	workers := make([]*worker, o.workers)
	var runs sync.WaitGroup
	defer func() {
		for _, w := range workers {
			if w != nil {
				w.ex.Close()
			}
		}
		runs.Wait()
	}()
	for i := range workers {
		w := &worker{}
		if srv != nil {
			w.conn = srv.Connect(fakezk.ConnConfig{})
		} else {
			c, err := zkadapter.Dial(ctx, zkadapter.Config{Servers: strings.Split(o.zk, ","), SessionTimeout: 10 * time.Second})
			if err != nil {
				return fmt.Errorf("connecting to %s: %w", o.zk, err)
			}
			w.conn = c
		}
		ex, err := executor.New(executor.Config{Conn: w.conn, Seed: o.seed + uint64(i)})
		if err != nil {
			return err
		}
		w.ex = ex
		workers[i] = w
		runs.Add(1)
		go func() { defer runs.Done(); ex.Run(ctx) }()
	}

	// The parent of the sequence node; the node itself is created by the
	// first draw.
	if _, err := executor.Await(ctx, workers[0].ex, task.Create("/quickstart", nil, task.Persistent)); err != nil && !errors.Is(err, task.ErrNodeExists) {
		return err
	}

	total := o.workers * o.ids
	var mu sync.Mutex
	drawn, faults := 0, []string{}
	// On the embedded server, three faults spread over the run: two
	// connection drops (the first applying whatever is in flight, the
	// second not; the embedded server answers at once, so there is rarely
	// anything in flight) and a session expiry. Each fires once the run
	// passes its share of IDs.
	type fault struct {
		at   int
		name string
		do   func(*fakezk.Conn)
	}
	var plan []fault
	if srv != nil {
		plan = []fault{
			{total / 5, "connection drop", func(c *fakezk.Conn) { srv.Drop(c, true) }},
			{2 * total / 5, "connection drop", func(c *fakezk.Conn) { srv.Drop(c, false) }},
			{3 * total / 5, "session expiry", srv.Expire},
		}
	}
	inject := func(n int) {
		mu.Lock()
		defer mu.Unlock()
		for len(plan) > 0 && n >= plan[0].at {
			c := workers[len(faults)%len(workers)].conn.(*fakezk.Conn)
			plan[0].do(c)
			faults = append(faults, plan[0].name)
			plan = plan[1:]
		}
	}

	var wg sync.WaitGroup
	errs := make([]error, len(workers))
	for i, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for len(w.ids) < o.ids {
				id, err := executor.Await(ctx, w.ex, seqid.Next(path))
				if errors.Is(err, task.ErrSessionExpired) {
					continue // the session was replaced; draw again on the new one
				}
				if err != nil {
					errs[i] = err
					return
				}
				w.ids = append(w.ids, id)
				mu.Lock()
				drawn++
				n := drawn
				mu.Unlock()
				if n%(total/4+1) == 0 {
					fmt.Fprintf(out, "  progress: %d/%d IDs\n", n, total)
				}
				inject(n)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	final, err := executor.Await(ctx, workers[0].ex, task.Get(path))
	if err != nil {
		return err
	}
	last, err := seqid.Decode(final.Data)
	if err != nil {
		return err
	}
	return summarize(out, workers, last, faults)
}

func summarize(out io.Writer, workers []*worker, last int64, faults []string) error {
	seen := map[int64]int{}
	var lo, hi int64
	n := 0
	for wi, w := range workers {
		for _, id := range w.ids {
			if n == 0 || id < lo {
				lo = id
			}
			if n == 0 || id > hi {
				hi = id
			}
			n++
			if prev, dup := seen[id]; dup {
				return fmt.Errorf("FAILED: ID %d handed out twice (workers %d and %d)", id, prev, wi)
			}
			seen[id] = wi
		}
	}
	fmt.Fprintf(out, "faults injected: %d", len(faults))
	if len(faults) > 0 {
		fmt.Fprintf(out, " (%s)", strings.Join(faults, ", "))
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "IDs issued: %d, all distinct: yes, range %d..%d (%s..%s), gaps: %d\n",
		n, lo, hi, seqid.Hex(lo), seqid.Hex(hi), (hi-lo+1)-int64(n))
	if last < hi {
		return fmt.Errorf("FAILED: the sequence node is at %d, below the highest ID issued %d", last, hi)
	}
	fmt.Fprintf(out, "sequence node at %d >= highest ID issued: yes\n", last)
	fmt.Fprintln(out, "OK")
	return nil
}

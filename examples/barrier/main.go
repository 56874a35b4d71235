// Command barrier shows the barrier recipes: workers, each with its own
// ZooKeeper session, wait at a start gate (a barrier) that a coordinator
// lifts, then go through rounds of a double barrier: all enter together,
// work, and all leave together. On the embedded server, faults are
// injected along the way (a connection drop with the create applied, a
// session expiry between enter and leave). It checks that nobody passed
// the gate before it was lifted, that in every round nobody entered before
// every worker had arrived and nobody finished leaving before every
// worker had started to leave, and that no participant node is left; it
// prints a summary and exits 1 if a check failed.
//
//	go run ./examples/barrier                 # embedded in-memory ZooKeeper (fakezk)
//	go run ./examples/barrier -zk host:2181   # a real server or ensemble
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
)

type options struct {
	servers string // -zk
	seed    uint64
	workers int
	rounds  int
	timeout time.Duration
}

func parse(args []string, out io.Writer) (*options, error) {
	o := new(options)
	fs := flag.NewFlagSet("barrier", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.servers, "zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist); empty runs an embedded fakezk")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the embedded fakezk")
	fs.IntVar(&o.workers, "workers", 4, "workers, each with its own session (at least 2)")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds of the double barrier")
	fs.DurationVar(&o.timeout, "timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.workers < 2 || o.rounds < 1 {
		return o, fmt.Errorf("-workers must be at least 2 and -rounds at least 1")
	}
	return o, nil
}

// lossy is an embedded connection that can lose the reply of its next
// participant create: armed, it drops the connection just after the
// create was applied, so the client sees connection loss for a create
// that happened.
type lossy struct {
	*fakezk.Conn
	srv   *fakezk.Server
	armed atomic.Bool
	lost  atomic.Int32 // replies lost
}

func (l *lossy) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	l.Conn.Do(req, done, watch)
	if cr, ok := req.(*task.CreateRequest); ok && cr.Mode == task.EphemeralSequential && l.armed.CompareAndSwap(true, false) {
		l.srv.Drop(l.Conn, true)
		l.lost.Add(1)
	}
}

// lossyOf is the client's lossy connection; nil on a real server.
func lossyOf(c *process) *lossy {
	l, _ := c.conn.(*lossy)
	return l
}

// report collects checks and faults.
type report struct {
	Checks
	mu     sync.Mutex
	out    io.Writer
	faults int
}

func (r *report) printf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.out, format, args...)
}

// fault runs do on the embedded server (a real server gets none).
func (r *report) fault(srv *fakezk.Server, c *process, what string, do func(*fakezk.Server, *fakezk.Conn)) {
	if srv == nil {
		return
	}
	do(srv, lossyOf(c).Conn)
	r.mu.Lock()
	r.faults++
	r.mu.Unlock()
	r.printf("  fault: %s on %s\n", what, c.name)
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
	where, root := "ZooKeeper at "+o.servers, fmt.Sprintf("/barrier-example-%x", rand.Uint64())
	if o.servers == "" {
		srv = fakezk.New(fakezk.Config{Seed: o.seed})
		defer srv.Close()
		where, root = fmt.Sprintf("embedded ZooKeeper (fakezk), seed %d", o.seed), "/barrier-example"
	}
	r := &report{out: out}
	fmt.Fprintf(out, "%s, %d workers, %d rounds, root %s\n", where, o.workers, o.rounds, root)
	// The cleaner, the run's first session and one no fault touches,
	// deletes the run's nodes at the end, whatever happened: deferred
	// first, cleanUp runs last, once every other process has stopped.
	cleaner, err := start(ctx, srv, o.servers, "cleaner")
	if err != nil {
		return err
	}
	defer cleaner.stop()
	defer func() { err = cleanUp(ctx, cleaner.ex, root, err, out) }()

	coord, err := start(ctx, srv, o.servers, "coordinator")
	if err != nil {
		return err
	}
	defer coord.stop()
	workers := make([]*process, o.workers)
	for i := range workers {
		if workers[i], err = start(ctx, srv, o.servers, fmt.Sprintf("worker-%d", i+1)); err != nil {
			return err
		}
		defer workers[i].stop()
	}

	if err := startGate(ctx, r, coord, workers, root+"/start"); err != nil {
		return err
	}
	for round := 1; round <= o.rounds; round++ {
		if err := doubleRound(ctx, r, srv, workers, fmt.Sprintf("%s/round-%d", root, round), round); err != nil {
			return err
		}
	}

	// No participant node is left in any round.
	for round := 1; round <= o.rounds; round++ {
		dir := fmt.Sprintf("%s/round-%d", root, round)
		cl, err := executor.Await(ctx, coord.ex, task.Children(dir))
		if err != nil {
			return err
		}
		r.Check(len(cl.Names) == 1 && cl.Names[0] == barrier.ReadyNode,
			"round %d: no participant node left (children %v)", round, cl.Names)
	}
	if l := lossyOf(workers[0]); l != nil {
		r.Check(l.lost.Load() == 1, "%s's lost create reply was settled: it entered with one node (found by its owner)", workers[0].name)
	}
	fmt.Fprintf(out, "faults injected: %d\n", r.faults)
	r.Check(backgroundErrors.Load() == 0, "no background flow failed (%d)", backgroundErrors.Load())
	return r.Report(out)
}

// startGate: the coordinator sets a barrier, the workers wait for it, the
// coordinator removes it, every worker passes.
func startGate(ctx context.Context, r *report, coord *process, workers []*process, path string) error {
	fmt.Fprintln(r.out, "1. a start gate (barrier)")
	gate, err := barrier.NewClient(coord.ex, path)
	if err != nil {
		return err
	}
	if err := gate.Set(ctx, []byte("closed")); err != nil {
		return err
	}
	var lifted atomic.Bool
	var early atomic.Int32
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		g, err := barrier.NewClient(w.ex, path)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = g.Wait(ctx)
			if errs[i] == nil && !lifted.Load() {
				early.Add(1)
			}
		}()
	}
	lifted.Store(true)
	if err := gate.Remove(ctx); err != nil {
		return err
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	r.printf("  gate lifted: %d workers passed\n", len(workers))
	r.Check(early.Load() == 0, "nobody passed the start gate before it was lifted")
	return nil
}

// doubleRound: every worker enters the double barrier, works, leaves.
func doubleRound(ctx context.Context, r *report, srv *fakezk.Server, workers []*process, dir string, round int) error {
	fmt.Fprintf(r.out, "%d. double barrier, round %d\n", round+1, round)
	n := len(workers)
	var arrived, entered, leaving, left atomic.Int32
	var earlyEnter, earlyLeave atomic.Int32
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, w := range workers {
		d, err := barrier.NewDoubleClient(w.ex, dir, n)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 0 && round == 1 {
				r.fault(srv, w, "the reply of its participant create is lost (the create applied)", func(*fakezk.Server, *fakezk.Conn) {
					lossyOf(w).armed.Store(true)
				})
			}
			arrived.Add(1)
			p, err := d.Enter(ctx)
			if err != nil {
				errs[i] = fmt.Errorf("%s: enter: %w", w.name, err)
				return
			}
			if arrived.Load() < int32(n) {
				earlyEnter.Add(1)
			}
			entered.Add(1)
			leaving.Add(1)
			if i == 1 && round == 2 {
				// The participant's node goes with its session (it has
				// left); Leave goes on waiting on its new session.
				r.fault(srv, w, "session expiry between enter and leave", func(s *fakezk.Server, c *fakezk.Conn) { s.Expire(c) })
			}
			if err := d.Leave(ctx, p); err != nil {
				errs[i] = fmt.Errorf("%s: leave: %w", w.name, err)
				return
			}
			if leaving.Load() < int32(n) {
				earlyLeave.Add(1)
			}
			left.Add(1)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	r.printf("  %d entered together, %d left together\n", entered.Load(), left.Load())
	r.Check(earlyEnter.Load() == 0, "round %d: nobody entered before all %d had arrived", round, n)
	r.Check(earlyLeave.Load() == 0, "round %d: nobody finished leaving before all %d had started to leave", round, n)
	return nil
}

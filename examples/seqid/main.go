// Command seqid draws unique IDs from one sequence node with recipes/seqid.
// A few workers, each with its own ZooKeeper session and executor, draw at
// once: half take one ID per compare-and-set (seqid.Next), the others take
// them from blocks reserved in one compare-and-set each (seqid.Client).
// On the embedded server one worker's connection drops (its session
// lives on: its rounds wait for the reconnect and go on) and another's
// session expires (its generator goes on with the next session). A round
// whose reply is lost never hands its IDs out: they are skipped, a gap,
// never a repeat. It checks that no ID repeats,
// that each worker's IDs increase and that none is above the node's value,
// prints IDs in the legacy hex form too (seqid.Hex), and exits 1 if a
// check failed.
//
//	go run ./examples/seqid                  # embedded in-memory ZooKeeper (fakezk)
//	go run ./examples/seqid -zk host:2181    # a real server or ensemble
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

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

func run(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("seqid", flag.ContinueOnError)
	fs.SetOutput(out)
	servers := fs.String("zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist); empty runs an embedded fakezk")
	seed := fs.Uint64("seed", 1, "seed of the embedded fakezk")
	nWorkers := fs.Int("workers", 4, "workers, each with its own session (at least 2)")
	ids := fs.Int("ids", 60, "IDs each worker draws (at least 3)")
	block := fs.Int64("block", 10, "IDs reserved at a time by the block workers")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *nWorkers < 2 || *ids < 3 || *block < 1 || fs.NArg() > 0 {
		return errors.New("want -workers >= 2, -ids >= 3, -block >= 1 and no arguments")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	// srv is the embedded server, nil when -zk names a real one; there the
	// example's nodes go under a root of their own, apart from other runs,
	// and are deleted at the end.
	var srv *fakezk.Server
	where, root := "ZooKeeper at "+*servers, fmt.Sprintf("/seqid-example-%x", rand.Uint64())
	if *servers == "" {
		srv = fakezk.New(fakezk.Config{Seed: *seed})
		defer srv.Close()
		where, root = fmt.Sprintf("embedded ZooKeeper (fakezk), seed %d", *seed), "/seqid-example"
	}
	seq := root + "/ids"
	fmt.Fprintf(out, "%s, %d workers x %d IDs, sequence %s\n", where, *nWorkers, *ids, seq)
	// The cleaner, the run's first session and one no fault touches,
	// deletes the run's nodes at the end, whatever happened: deferred
	// first, cleanUp runs last, once every other process has stopped.
	cleaner, err := start(ctx, srv, *servers)
	if err != nil {
		return err
	}
	defer cleaner.stop()
	defer func() { err = cleanUp(ctx, cleaner.ex, root, err, out) }()

	admin, err := start(ctx, srv, *servers)
	if err != nil {
		return err
	}
	defer admin.stop()
	var workers []*process
	for range *nWorkers {
		w, err := start(ctx, srv, *servers)
		if err != nil {
			return err
		}
		defer w.stop()
		workers = append(workers, w)
	}
	if _, err := executor.Await(ctx, admin.ex, task.Create(root, nil, task.Persistent)); err != nil && !errors.Is(err, task.ErrNodeExists) {
		return err
	}

	// Faults, on the embedded server only, a third and two thirds of the
	// way: a connection drop (worker 1 draws by CAS), then a session
	// expiry (worker 2 draws blocks).
	total := *nWorkers * *ids
	var mu sync.Mutex
	drawn, expired := 0, int64(0)
	after := func() {
		mu.Lock()
		defer mu.Unlock()
		drawn++
		switch {
		case srv == nil:
		case drawn == total/3:
			fmt.Fprintln(out, "  fault: worker 1's connection drops")
			srv.Drop(workers[0].conn.(*fakezk.Conn), false)
		case drawn == 2*total/3:
			fmt.Fprintln(out, "  fault: worker 2's session expires")
			expired = workers[1].conn.(*fakezk.Conn).SessionID()
			srv.Expire(workers[1].conn.(*fakezk.Conn))
		}
	}

	got := make([][]int64, *nWorkers)
	errs := make([]error, *nWorkers)
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Even workers: one CAS per ID (the task, awaited). Odd
			// workers: a Generator taking IDs from blocks.
			next := func() (int64, error) { return executor.AwaitAcrossExpiry(ctx, w.ex, seqid.Next(seq)) }
			if i%2 == 1 {
				g, err := seqid.NewClient(w.ex, seq, *block)
				if err != nil {
					errs[i] = err
					return
				}
				next = func() (int64, error) { return g.Next(ctx) }
			}
			for range *ids {
				id, err := next()
				if err != nil {
					errs[i] = fmt.Errorf("worker %d: %w", i+1, err)
					return
				}
				got[i] = append(got[i], id)
				after()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	d, err := executor.Await(ctx, admin.ex, task.Get(seq))
	if err != nil {
		return err
	}
	value, err := seqid.Decode(d.Data)
	if err != nil {
		return err
	}

	// The checks.
	var failed []string
	seen := map[int64]int{}
	var hi int64
	order := "each worker's increasing"
	for i, mine := range got {
		kind := "CAS"
		if i%2 == 1 {
			kind = fmt.Sprintf("blocks of %d", *block)
		}
		fmt.Fprintf(out, "  worker %d (%s): %d, %d, %d ... %d (hex %s ... %s)\n", i+1, kind,
			mine[0], mine[1], mine[2], mine[len(mine)-1], seqid.Hex(mine[0]), seqid.Hex(mine[len(mine)-1]))
		for k, id := range mine {
			if prev, ok := seen[id]; ok {
				failed = append(failed, fmt.Sprintf("ID %d drawn by worker %d and worker %d", id, prev+1, i+1))
			}
			if k > 0 && id <= mine[k-1] {
				order = fmt.Sprintf("worker %d drew %d after %d", i+1, id, mine[k-1])
				failed = append(failed, order)
			}
			seen[id] = i
			hi = max(hi, id)
		}
	}
	if srv != nil && (expired == 0 || workers[1].conn.(*fakezk.Conn).SessionID() == expired) {
		failed = append(failed, "worker 2's session did not expire")
	}
	if hi > value {
		failed = append(failed, fmt.Sprintf("ID %d above the node's value %d", hi, value))
	}
	fmt.Fprintf(out, "summary\n  %d IDs drawn, %d distinct, %s\n", total, len(seen), order)
	fmt.Fprintf(out, "  highest %d (%s), node value %d: %d IDs reserved but not handed out (gaps, never repeats)\n",
		hi, seqid.Hex(hi), value, value-int64(len(seen)))
	if n := backgroundErrors.Load(); n > 0 {
		failed = append(failed, fmt.Sprintf("%d background flows failed (logged above)", n))
	}
	for _, f := range failed {
		fmt.Fprintln(out, "  FAILED:", f)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d check(s) failed", len(failed))
	}
	return nil // cleanUp says OK
}

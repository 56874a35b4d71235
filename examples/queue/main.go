// Command queue runs the distributed queue of recipes/queue in its
// at-least-once mode: a producer puts jobs (every fourth one urgent, with
// a lower priority number), a consumer takes the first job and dies
// before acknowledging it (its session closes), and the other consumers,
// each with its own session, take and acknowledge jobs until every job is
// done. The dead consumer's job goes back to the queue under its own name
// and is done by another. It checks that every job was acknowledged
// exactly once, that the dead consumer's job was among them, and that the
// first job taken was urgent, prints a summary, and exits 1 if a check
// failed.
//
//	go run ./examples/queue                  # embedded in-memory ZooKeeper (fakezk)
//	go run ./examples/queue -zk host:2181    # a real server or ensemble
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

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/queue"
)

func run(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("queue", flag.ContinueOnError)
	fs.SetOutput(out)
	servers := fs.String("zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist); empty runs an embedded fakezk")
	seed := fs.Uint64("seed", 1, "seed of the embedded fakezk")
	jobs := fs.Int("jobs", 12, "jobs the producer puts (at least 2)")
	nConsumers := fs.Int("consumers", 2, "consumers that survive (at least 1)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *jobs < 2 || *nConsumers < 1 || fs.NArg() > 0 {
		return errors.New("want -jobs >= 2, -consumers >= 1 and no arguments")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	// srv is the embedded server, nil when -zk names a real one; there the
	// example's nodes go under a root of their own, apart from other runs,
	// and are deleted at the end.
	var srv *fakezk.Server
	where, root := "ZooKeeper at "+*servers, fmt.Sprintf("/queue-example-%x", rand.Uint64())
	if *servers == "" {
		srv = fakezk.New(fakezk.Config{Seed: *seed})
		defer srv.Close()
		where, root = fmt.Sprintf("embedded ZooKeeper (fakezk), seed %d", *seed), "/queue-example"
	}
	dir := root + "/jobs"
	fmt.Fprintf(out, "%s, %d jobs, %d consumers and one that dies, queue %s\n", where, *jobs, *nConsumers, dir)
	// The cleaner, the run's first session and one no fault touches,
	// deletes the run's nodes at the end, whatever happened: deferred
	// first, cleanUp runs last, once every other process has stopped.
	cleaner, err := start(ctx, srv, *servers)
	if err != nil {
		return err
	}
	defer cleaner.stop()
	defer func() { err = cleanUp(ctx, cleaner.ex, root, err, out) }()

	// newClient starts a process, stopped at the end, and its queue client.
	var procs []*process
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	newClient := func() (*process, *queue.Client, error) {
		p, err := start(ctx, srv, *servers)
		if err != nil {
			return nil, nil, err
		}
		procs = append(procs, p)
		q, err := queue.NewClient(p.ex, dir, queue.WithMode(queue.AtLeastOnce))
		return p, q, err
	}
	_, producer, err := newClient()
	if err != nil {
		return err
	}
	for i := range *jobs {
		pri := 0
		if i%4 == 3 {
			pri = -1 // urgent
		}
		if _, err := producer.PutPriority(ctx, fmt.Appendf(nil, "job-%d", i), pri); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "  producer put %d jobs\n", *jobs)

	doomedClient, doomed, err := newClient()
	if err != nil {
		return err
	}
	first, err := doomed.Take(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  doomed consumer took %s (%s) and dies before acknowledging it\n", first.Data, first.Name)
	doomedClient.stop()

	var (
		mu    sync.Mutex
		acked = map[string]int{}
		by    = map[string]string{}
		done  int
		wg    sync.WaitGroup
		errs  = make([]error, *nConsumers)
	)
	for i := range *nConsumers {
		name := fmt.Sprintf("consumer %d", i+1)
		_, c, err := newClient()
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if done >= *jobs {
					mu.Unlock()
					return
				}
				mu.Unlock()
				tctx, tcancel := context.WithTimeout(ctx, 500*time.Millisecond)
				it, err := c.Take(tctx)
				tcancel()
				if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
					continue // nothing left for now: look at the count again
				}
				if err != nil {
					errs[i] = err
					return
				}
				if err := c.Ack(ctx, it); err != nil {
					errs[i] = err
					return
				}
				mu.Lock()
				acked[string(it.Data)]++
				by[string(it.Data)] = name
				done++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var checks Checks
	once := 0
	for i := range *jobs {
		if acked[fmt.Sprintf("job-%d", i)] == 1 {
			once++
		}
	}
	checks.Check(once == *jobs && len(acked) == *jobs, "%d of %d jobs acknowledged exactly once", once, *jobs)
	checks.Check(acked[string(first.Data)] == 1, "the dead consumer's %s came back and was done by %s", first.Data, by[string(first.Data)])
	checks.Check(first.Priority == -1, "the first job taken was urgent (%s, priority %d)", first.Data, first.Priority)
	checks.Check(backgroundErrors.Load() == 0, "no background flow failed (%d)", backgroundErrors.Load())
	return checks.Report(out)
}

// Command semaphore runs the counting semaphore of recipes/semaphore: a
// few workers, each with its own ZooKeeper session and executor, share a
// semaphore of -leases leases (its nodes laid out as Apache Curator's
// InterProcessSemaphoreV2 lays them out, so Curator clients could share
// it). While it holds a lease a worker marks itself inside: it creates an
// ephemeral sequential marker node with a fenced write (one multi that
// also checks its lease node), lists the markers, and deletes its marker
// with a fenced write before it returns the lease. More markers than
// leases at once would be more holders than leases. On the embedded
// server one holder's session expires in its section: its lease node (and
// marker) go with the session, the worker is told (Lease.Done), and the
// fenced delete it still sends is refused (semaphore.ErrLeaseLost). It
// checks that no listing saw more markers than leases and that every
// other section completed, prints a summary, and exits 1 if a check
// failed.
//
//	go run ./examples/semaphore                  # embedded in-memory ZooKeeper (fakezk)
//	go run ./examples/semaphore -zk host:2181    # a real server or ensemble
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
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/task"
)

func run(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("semaphore", flag.ContinueOnError)
	fs.SetOutput(out)
	servers := fs.String("zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist); empty runs an embedded fakezk")
	seed := fs.Uint64("seed", 1, "seed of the embedded fakezk")
	nWorkers := fs.Int("workers", 4, "workers, each with its own session (more than -leases)")
	leases := fs.Int("leases", 2, "leases of the semaphore (at least 1)")
	sections := fs.Int("sections", 3, "sections each worker completes (at least 2)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *leases < 1 || *nWorkers <= *leases || *sections < 2 || fs.NArg() > 0 {
		return errors.New("want -leases >= 1, -workers > -leases, -sections >= 2 and no arguments")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	// srv is the embedded server, nil when -zk names a real one; there the
	// example's nodes go under a root of their own, apart from other runs,
	// and are deleted at the end.
	var srv *fakezk.Server
	where, root := "ZooKeeper at "+*servers, fmt.Sprintf("/semaphore-example-%x", rand.Uint64())
	if *servers == "" {
		srv = fakezk.New(fakezk.Config{Seed: *seed})
		defer srv.Close()
		where, root = fmt.Sprintf("embedded ZooKeeper (fakezk), seed %d", *seed), "/semaphore-example"
	}
	path, inside := root+"/sem", root+"/inside"
	fmt.Fprintf(out, "%s, %d workers x %d sections, %d leases at %s\n", where, *nWorkers, *sections, *leases, path)
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
	for _, p := range []string{root, inside} {
		if _, err := executor.Await(ctx, admin.ex, task.Create(p, nil, task.Persistent)); err != nil && !errors.Is(err, task.ErrNodeExists) {
			return err
		}
	}

	total := *nWorkers * *sections
	var (
		mu       sync.Mutex
		entered  int
		done     int
		peak     int
		refused  []string
		wg       sync.WaitGroup
		errs     = make([]error, *nWorkers)
		checks   Checks
		expiries int
	)
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
	}
	// section holds one lease; it reports whether the section completed.
	section := func(i int, w *process, s *semaphore.Client) (bool, error) {
		l, err := s.Acquire(ctx)
		if errors.Is(err, task.ErrSessionExpired) {
			return false, nil // the session ended while waiting: wait again
		}
		if err != nil {
			return false, err
		}
		defer s.Release(ctx, l)
		rs, err := s.Fenced(ctx, l, task.CreateOp(inside+"/w-", nil, task.EphemeralSequential))
		if err != nil {
			return false, err
		}
		marker := rs[0].Path
		cl, err := executor.Await(ctx, w.ex, task.Children(inside))
		if err != nil {
			return false, err
		}
		mu.Lock()
		entered++
		n := entered
		peak = max(peak, len(cl.Names))
		mu.Unlock()
		say("  worker %d (token %d): inside with %d holder(s)", i+1, l.Token(), len(cl.Names))
		if srv != nil && n == total/2 {
			say("  fault: worker %d's session expires in its section", i+1)
			srv.Expire(w.conn.(*fakezk.Conn))
			select {
			case <-l.Done():
				say("  worker %d is told: %v", i+1, l.Err())
			case <-ctx.Done():
				return false, ctx.Err()
			}
		}
		_, err = s.Fenced(ctx, l, task.DeleteOp(marker, task.AnyVersion))
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, semaphore.ErrLeaseLost):
			say("  worker %d (token %d): late write refused: %v", i+1, l.Token(), err)
			mu.Lock()
			defer mu.Unlock()
			refused = append(refused, fmt.Sprintf("worker %d", i+1))
			expiries++
			return false, nil
		}
		return false, err
	}
	for i, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := semaphore.NewClient(w.ex, path, *leases)
			for n := 0; err == nil && n < *sections; {
				var ok bool
				if ok, err = section(i, w, s); ok {
					n++
					mu.Lock()
					done++
					mu.Unlock()
				}
			}
			if err != nil {
				errs[i] = fmt.Errorf("worker %d: %w", i+1, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	left, err := executor.Await(ctx, admin.ex, task.Children(path+"/leases"))
	if err != nil {
		return err
	}

	fmt.Fprintf(out, "summary\n  %d sections completed, at most %d holder(s) of %d leases seen at once\n", done, peak, *leases)
	fmt.Fprintf(out, "  late writes refused by ZooKeeper: %d %v\n", len(refused), refused)
	checks.Check(peak <= *leases, "no listing saw more holders than leases (%d <= %d)", peak, *leases)
	checks.Check(done == total, "every worker completed its sections (%d of %d)", done, total)
	checks.Check(len(left.Names) == 0, "no lease node left (%d)", len(left.Names))
	if srv != nil {
		checks.Check(expiries == 1, "the holder whose session expired was refused (%d)", expiries)
	}
	checks.Check(backgroundErrors.Load() == 0, "no background flow failed (%d)", backgroundErrors.Load())
	return checks.Report(out)
}

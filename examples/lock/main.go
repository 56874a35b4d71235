// Command lock runs the lock recipe of recipes/lock: a few workers, each
// with its own ZooKeeper session and executor, take a lock.Client in turn.
// In the critical section a worker reads a counter node and writes it
// plus one through Held.Fenced: one multi that also checks the worker's
// lock node, so ZooKeeper itself refuses the write of a holder that has
// lost the lock. On the embedded server one holder's connection drops
// mid-section (its session lives on: it keeps the lock and its write is
// accepted), and later another holder's session expires mid-section: its
// lock node goes with the session, so the lock passes to the next worker;
// the holder is told (Held.Done), and the fenced write it still sends is
// refused (lock.ErrLockLost). It checks that the counter
// equals the accepted writes and that the fencing tokens of the writes
// increase, prints a summary, and exits 1 if a check failed.
//
//	go run ./examples/lock                  # embedded in-memory ZooKeeper (fakezk)
//	go run ./examples/lock -zk host:2181    # a real server or ensemble
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// write is a fenced write ZooKeeper accepted.
type write struct {
	value, token int64
}

func run(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("lock", flag.ContinueOnError)
	fs.SetOutput(out)
	servers := fs.String("zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist); empty runs an embedded fakezk")
	seed := fs.Uint64("seed", 1, "seed of the embedded fakezk")
	nWorkers := fs.Int("workers", 3, "workers, each with its own session (at least 2)")
	sections := fs.Int("sections", 4, "critical sections each worker completes (at least 2)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *nWorkers < 2 || *sections < 2 || fs.NArg() > 0 {
		return errors.New("want -workers >= 2, -sections >= 2 and no arguments")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	// srv is the embedded server, nil when -zk names a real one; there the
	// example's nodes go under a root of their own, apart from other runs,
	// and are deleted at the end.
	var srv *fakezk.Server
	where, root := "ZooKeeper at "+*servers, fmt.Sprintf("/lock-example-%x", rand.Uint64())
	if *servers == "" {
		srv = fakezk.New(fakezk.Config{Seed: *seed})
		defer srv.Close()
		where, root = fmt.Sprintf("embedded ZooKeeper (fakezk), seed %d", *seed), "/lock-example"
	}
	dir, counter := root+"/lock", root+"/counter"
	fmt.Fprintf(out, "%s, %d workers x %d sections, lock %s\n", where, *nWorkers, *sections, dir)
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
	for _, p := range []string{root, counter} {
		if _, err := executor.Await(ctx, admin.ex, task.Create(p, []byte("0"), task.Persistent)); err != nil && !errors.Is(err, task.ErrNodeExists) {
			return err
		}
	}

	total := *nWorkers * *sections
	var (
		mu       sync.Mutex
		entered  int
		writes   []write
		refused  []string
		failed   []string
		wg       sync.WaitGroup
		errs     = make([]error, *nWorkers)
		holdDrop bool // the holder whose connection dropped still held the lock
	)
	// say prints a line; the holder that lost its lock overlaps the next.
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
	}
	section := func(i int, w *process, m *lock.Client) (bool, error) {
		held, err := m.Acquire(ctx)
		if errors.Is(err, task.ErrSessionExpired) {
			return false, nil // the session ended while waiting: wait again
		}
		if err != nil {
			return false, err
		}
		defer m.Release(ctx, held)
		mu.Lock()
		entered++
		n := entered
		mu.Unlock()
		d, err := executor.Await(ctx, w.ex, task.Get(counter))
		if err != nil {
			return false, err
		}
		switch {
		case srv != nil && n == 2:
			say("  fault: worker %d's connection drops in its section", i+1)
			srv.Drop(w.conn.(*fakezk.Conn), false)
		case srv != nil && n == total/2+1:
			say("  fault: worker %d's session expires in its section", i+1)
			srv.Expire(w.conn.(*fakezk.Conn))
			select {
			case <-held.Done():
				say("  worker %d is told: %v", i+1, held.Err())
			case <-ctx.Done():
				return false, ctx.Err()
			}
		}
		v, err := strconv.ParseInt(string(d.Data), 10, 64)
		if err != nil {
			return false, fmt.Errorf("counter %q: %w", d.Data, err)
		}
		_, err = m.Fenced(ctx, held, task.SetOp(counter, strconv.AppendInt(nil, v+1, 10), d.Stat.Version))
		switch {
		case err == nil:
			say("  worker %d (token %d): counter %d -> %d", i+1, held.Token(), v, v+1)
			mu.Lock()
			defer mu.Unlock()
			writes = append(writes, write{v + 1, held.Token()})
			holdDrop = holdDrop || n == 2
			return true, nil
		case errors.Is(err, lock.ErrLockLost):
			say("  worker %d (token %d): late write refused: %v", i+1, held.Token(), err)
			mu.Lock()
			defer mu.Unlock()
			refused = append(refused, fmt.Sprintf("worker %d", i+1))
			return false, nil
		}
		return false, err
	}
	for i, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := lock.NewClient(w.ex, dir)
			for done := 0; err == nil && done < *sections; {
				var ok bool
				if ok, err = section(i, w, m); ok {
					done++
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
	d, err := executor.Await(ctx, admin.ex, task.Get(counter))
	if err != nil {
		return err
	}

	// The checks: every accepted write moved the counter by one, in the
	// order of their fencing tokens.
	slices.SortFunc(writes, func(a, b write) int { return cmp.Compare(a.value, b.value) })
	if string(d.Data) != strconv.Itoa(len(writes)) {
		failed = append(failed, fmt.Sprintf("counter at %s after %d accepted writes", d.Data, len(writes)))
	}
	order := "in token order"
	for k, wr := range writes {
		if wr.value != int64(k+1) || (k > 0 && wr.token <= writes[k-1].token) {
			order = fmt.Sprintf("out of order at write %d: value %d, token %d", k+1, wr.value, wr.token)
			failed = append(failed, order)
		}
	}
	if srv != nil && (len(refused) != 1 || !holdDrop) {
		failed = append(failed, fmt.Sprintf("faults: %d refused writes (want 1), lock kept across the drop: %v", len(refused), holdDrop))
	}
	fmt.Fprintf(out, "summary\n  %d sections, %d fenced writes accepted %s, counter at %s\n", entered, len(writes), order, d.Data)
	fmt.Fprintf(out, "  late writes refused by ZooKeeper: %d %v\n", len(refused), refused)
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

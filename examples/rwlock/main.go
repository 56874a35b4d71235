// Command rwlock runs the readers-writer lock of recipes/rwlock: readers
// and writers, each with its own ZooKeeper session and executor, share a
// counter node.
//
// First the sharing: every reader takes the read lock and they all hold it
// together; a writer that tries then would wait (rwlock.ErrBusy); a writer
// that queues waits, and a reader that comes after the waiting writer
// would wait too (writers are not starved); once the readers release, the
// writer holds, with a fencing token above every reader's.
//
// Then the work: writers, holding the write lock, read the counter and
// write it plus one through Held.Fenced (a multi that also checks the
// writer's lock node, so ZooKeeper refuses the write of a writer that has
// lost the lock); readers, holding the read lock, read it. On the embedded
// server one writer's session expires in its section: its lock node goes
// with the session, the lock passes on, the writer is told (Held.Done) and
// the fenced write it still sends is refused (rwlock.ErrLockLost). It
// checks that the counter equals the accepted writes and that their
// tokens increase, prints a summary, and exits 1 if a check failed.
//
//	go run ./examples/rwlock                  # embedded in-memory ZooKeeper (fakezk)
//	go run ./examples/rwlock -zk host:2181    # a real server or ensemble
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
	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/task"
)

// write is a fenced write ZooKeeper accepted.
type write struct {
	value, token int64
}

func run(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("rwlock", flag.ContinueOnError)
	fs.SetOutput(out)
	servers := fs.String("zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist); empty runs an embedded fakezk")
	seed := fs.Uint64("seed", 1, "seed of the embedded fakezk")
	nReaders := fs.Int("readers", 3, "readers, each with its own session (at least 2)")
	nWriters := fs.Int("writers", 2, "writers, each with its own session (at least 1)")
	sections := fs.Int("sections", 4, "critical sections each reader and writer completes (at least 2)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *nReaders < 2 || *nWriters < 1 || *sections < 2 || fs.NArg() > 0 {
		return errors.New("want -readers >= 2, -writers >= 1, -sections >= 2 and no arguments")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	// srv is the embedded server, nil when -zk names a real one; there the
	// example's nodes go under a root of their own, apart from other runs,
	// and are deleted at the end.
	var srv *fakezk.Server
	where, root := "ZooKeeper at "+*servers, fmt.Sprintf("/rwlock-example-%x", rand.Uint64())
	if *servers == "" {
		srv = fakezk.New(fakezk.Config{Seed: *seed})
		defer srv.Close()
		where, root = fmt.Sprintf("embedded ZooKeeper (fakezk), seed %d", *seed), "/rwlock-example"
	}
	dir, counter := root+"/lock", root+"/counter"
	fmt.Fprintf(out, "%s, %d readers and %d writers x %d sections, lock %s\n", where, *nReaders, *nWriters, *sections, dir)
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
	type worker struct {
		name string
		c    *process
		m    *rwlock.Client
	}
	newWorker := func(name string) (worker, error) {
		c, err := start(ctx, srv, *servers)
		if err != nil {
			return worker{}, err
		}
		m, err := rwlock.NewClient(c.ex, dir)
		if err != nil {
			c.stop()
		}
		return worker{name, c, m}, err
	}
	var readers, writers []worker
	for i := range *nReaders {
		w, err := newWorker(fmt.Sprintf("reader %d", i+1))
		if err != nil {
			return err
		}
		defer w.c.stop()
		readers = append(readers, w)
	}
	for i := range *nWriters {
		w, err := newWorker(fmt.Sprintf("writer %d", i+1))
		if err != nil {
			return err
		}
		defer w.c.stop()
		writers = append(writers, w)
	}
	for _, p := range []string{root, counter} {
		if _, err := executor.Await(ctx, admin.ex, task.Create(p, []byte("0"), task.Persistent)); err != nil && !errors.Is(err, task.ErrNodeExists) {
			return err
		}
	}
	var checks Checks

	// Sharing, and a writer that is not starved.
	fmt.Fprintln(out, "sharing")
	var held []*rwlock.Held
	for _, r := range readers {
		h, err := r.m.AcquireRead(ctx)
		if err != nil {
			return err
		}
		held = append(held, h)
	}
	together := true
	for _, h := range held {
		together = together && h.IsHeld()
	}
	fmt.Fprintf(out, "  %d readers hold the read lock together: %v\n", len(held), together)
	checks.Check(together, "%d readers held the read lock together", len(held))
	_, err = writers[0].m.TryAcquire(ctx)
	fmt.Fprintf(out, "  %s tries the write lock: %v\n", writers[0].name, err)
	checks.Check(errors.Is(err, rwlock.ErrBusy), "a writer's TryAcquire while readers hold would wait")
	type result struct {
		h   *rwlock.Held
		err error
	}
	queued := make(chan result, 1)
	go func() {
		h, err := writers[0].m.Acquire(ctx)
		queued <- result{h, err}
	}()
	for { // until the writer's node is in the queue
		cl, err := executor.Await(ctx, admin.ex, task.Children(dir))
		if err != nil {
			return err
		}
		if len(cl.Names) == len(held)+1 {
			break
		}
	}
	late, err := newWorker("late reader")
	if err != nil {
		return err
	}
	defer late.c.stop()
	_, err = late.m.TryAcquireRead(ctx)
	fmt.Fprintf(out, "  a reader that comes after the waiting writer tries: %v\n", err)
	checks.Check(errors.Is(err, rwlock.ErrBusy), "a reader behind a waiting writer would wait (writers are not starved)")
	maxReader := int64(0)
	for i, h := range held {
		maxReader = max(maxReader, h.Token())
		if err := readers[i].m.Release(ctx, h); err != nil {
			return err
		}
	}
	r := <-queued
	if r.err != nil {
		return r.err
	}
	fmt.Fprintf(out, "  the readers release; %s holds with token %d (readers' up to %d)\n", writers[0].name, r.h.Token(), maxReader)
	checks.Check(r.h.Token() > maxReader, "the writer's token is above every reader's before it")
	if err := writers[0].m.Release(ctx, r.h); err != nil {
		return err
	}

	// The work.
	fmt.Fprintln(out, "work")
	var (
		mu      sync.Mutex
		entered int
		writes  []write
		refused []string
		reads   int
		wg      sync.WaitGroup
		errs    = make([]error, len(readers)+len(writers))
	)
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
	}
	writeSection := func(w worker) (bool, error) {
		h, err := w.m.Acquire(ctx)
		if errors.Is(err, task.ErrSessionExpired) {
			return false, nil // the session ended while waiting: wait again
		}
		if err != nil {
			return false, err
		}
		defer w.m.Release(ctx, h)
		mu.Lock()
		entered++
		n := entered
		mu.Unlock()
		d, err := executor.Await(ctx, w.c.ex, task.Get(counter))
		if err != nil {
			return false, err
		}
		if srv != nil && n == 2 {
			say("  fault: %s's session expires in its section", w.name)
			srv.Expire(w.c.conn.(*fakezk.Conn))
			select {
			case <-h.Done():
				say("  %s is told: %v", w.name, h.Err())
			case <-ctx.Done():
				return false, ctx.Err()
			}
		}
		v, err := strconv.ParseInt(string(d.Data), 10, 64)
		if err != nil {
			return false, fmt.Errorf("counter %q: %w", d.Data, err)
		}
		_, err = w.m.Fenced(ctx, h, task.SetOp(counter, strconv.AppendInt(nil, v+1, 10), d.Stat.Version))
		switch {
		case err == nil:
			say("  %s (token %d): counter %d -> %d", w.name, h.Token(), v, v+1)
			mu.Lock()
			defer mu.Unlock()
			writes = append(writes, write{v + 1, h.Token()})
			return true, nil
		case errors.Is(err, rwlock.ErrLockLost):
			say("  %s (token %d): late write refused: %v", w.name, h.Token(), err)
			mu.Lock()
			defer mu.Unlock()
			refused = append(refused, w.name)
			return false, nil
		}
		return false, err
	}
	readSection := func(w worker) (bool, error) {
		h, err := w.m.AcquireRead(ctx)
		if errors.Is(err, task.ErrSessionExpired) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		defer w.m.Release(ctx, h)
		d, err := executor.Await(ctx, w.c.ex, task.Get(counter))
		if err != nil {
			return false, err
		}
		say("  %s (token %d) reads %s", w.name, h.Token(), d.Data)
		mu.Lock()
		reads++
		mu.Unlock()
		return true, nil
	}
	for i, w := range append(append([]worker(nil), readers...), writers...) {
		section := readSection
		if i >= len(readers) {
			section = writeSection
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < *sections; {
				ok, err := section(w)
				if err != nil {
					errs[i] = fmt.Errorf("%s: %w", w.name, err)
					return
				}
				if ok {
					done++
				}
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
	fmt.Fprintln(out, "summary")
	slices.SortFunc(writes, func(a, b write) int { return cmp.Compare(a.value, b.value) })
	checks.Check(string(d.Data) == strconv.Itoa(len(writes)), "%d fenced writes accepted, counter at %s", len(writes), d.Data)
	inOrder := true
	for k, wr := range writes {
		inOrder = inOrder && wr.value == int64(k+1) && (k == 0 || wr.token > writes[k-1].token)
	}
	checks.Check(inOrder, "the accepted writes came in token order")
	checks.Check(reads == *nReaders**sections, "%d reads under the read lock", reads)
	if srv != nil {
		checks.Check(len(refused) == 1, "late writes refused by ZooKeeper: %d %v", len(refused), refused)
	}
	checks.Check(backgroundErrors.Load() == 0, "no background flow failed (%d)", backgroundErrors.Load())
	return checks.Report(out)
}

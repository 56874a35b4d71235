// Command fence runs honest locking for a store outside ZooKeeper
// (recipes/fence): a few workers, each with its own ZooKeeper session and
// executor, take turns on one lock (recipes/lock) and, while they hold it,
// add one to a counter kept in a bbolt database file (recipes/fence/
// boltstore) with the lock's fencing token. One worker pauses while it
// holds the lock, as a process stalls in a long garbage collection or a
// stopped VM: its session ends meanwhile (on the embedded server it
// expires; on a real server the worker's session is closed, as the server
// would expire it), the next worker takes the lock and writes, and when
// the paused worker wakes it still believes it holds and sends its write.
// The database refuses it (fence.ErrFenced): a newer token has written the
// counter. It checks that the counter equals the writes that went
// through (no increment lost or made twice), that the stored tokens only
// grew, and that the late write was refused, prints a summary, and exits
// 1 if a check failed.
//
//	cd examples/fence               # a module of its own, for bbolt
//	go run .                        # embedded in-memory ZooKeeper (fakezk)
//	go run . -zk host:2181          # a real server or ensemble
//	go run . -db state.db           # keep the database (default: a temporary file)
//
// Tokens are zxids of the lock's nodes: they grow for as long as the
// ZooKeeper ensemble keeps its data, so a kept database refuses writes
// from a new embedded server, whose zxids start again (the example then
// fails its checks, as it should: a store must not accept tokens from a
// different lock's history).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/fence"
	"github.com/zkflow/zkflow/recipes/fence/boltstore"
	"github.com/zkflow/zkflow/recipes/lock"
)

func run(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("fence", flag.ContinueOnError)
	fs.SetOutput(out)
	servers := fs.String("zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist); empty runs an embedded fakezk")
	seed := fs.Uint64("seed", 1, "seed of the embedded fakezk")
	nWorkers := fs.Int("workers", 3, "workers, each with its own session (at least 2)")
	rounds := fs.Int("rounds", 4, "increments each worker makes (at least 2)")
	dbPath := fs.String("db", "", "the bbolt database file (default: a temporary file, removed at the end)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *nWorkers < 2 || *rounds < 2 || fs.NArg() > 0 {
		return errors.New("want -workers >= 2, -rounds >= 2 and no arguments")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	// srv is the embedded server, nil when -zk names a real one; there the
	// example's nodes go under a root of their own, apart from other runs,
	// and are deleted at the end.
	var srv *fakezk.Server
	where, root := "ZooKeeper at "+*servers, fmt.Sprintf("/fence-example-%x", rand.Uint64())
	if *servers == "" {
		srv = fakezk.New(fakezk.Config{Seed: *seed})
		defer srv.Close()
		where, root = fmt.Sprintf("embedded ZooKeeper (fakezk), seed %d", *seed), "/fence-example"
	}

	path := *dbPath
	if path == "" {
		dir, err := os.MkdirTemp("", "zkflow-fence-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "state.db")
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	store, err := boltstore.New(db, "fenced")
	if err != nil {
		return err
	}
	const key = "counter"
	dir := root + "/lock"
	fmt.Fprintf(out, "%s, %d workers x %d increments, lock %s, counter in %s\n", where, *nWorkers, *rounds, dir, path)
	// The cleaner, the run's first session and one no fault touches,
	// deletes the run's nodes at the end, whatever happened: deferred
	// first, cleanUp runs last, once every other process has stopped.
	cleaner, err := start(ctx, srv, *servers, "cleaner")
	if err != nil {
		return err
	}
	defer cleaner.stop()
	defer func() { err = cleanUp(ctx, cleaner.ex, root, err, out) }()

	var workers []*process
	for i := range *nWorkers {
		w, err := start(ctx, srv, *servers, fmt.Sprintf("worker %d", i+1))
		if err != nil {
			return err
		}
		defer w.stop()
		workers = append(workers, w)
	}
	base, err := load(ctx, store, key)
	if err != nil {
		return err
	}

	var (
		mu      sync.Mutex
		applied int     // increments that went through
		tokens  []int64 // the token of each, in the order they went through
		refused []string
		checks  Checks
		wg      sync.WaitGroup
		errs    = make([]error, *nWorkers)
		// The first worker to take the lock pauses; written is closed
		// once a newer holder has written: the paused worker wakes then.
		pauser  *process
		pausing = make(chan int64, 1)
		written = make(chan struct{})
	)
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
	}
	increment := func(name string, token int64) error {
		_, err := fence.Update(ctx, store, key, token, func(old []byte) ([]byte, error) {
			n := int64(0)
			if len(old) > 0 {
				var err error
				if n, err = strconv.ParseInt(string(old), 10, 64); err != nil {
					return nil, fmt.Errorf("counter %q: %w", old, err)
				}
			}
			return strconv.AppendInt(nil, n+1, 10), nil
		})
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		applied++
		tokens = append(tokens, token)
		select {
		case paused := <-pausing:
			if token > paused {
				close(written)
			} else {
				pausing <- paused
			}
		default:
		}
		return nil
	}
	// ended gets one value per worker that has stopped: the paused worker
	// also wakes once every other one has (none will write any more).
	ended := make(chan struct{}, len(workers))
	for i, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { ended <- struct{}{} }()
			l, err := lock.NewClient(w.ex, dir)
			for n := 0; err == nil && n < *rounds; n++ {
				var held *lock.Held
				if held, err = l.Acquire(ctx); err != nil {
					break
				}
				mu.Lock()
				pause := pauser == nil
				if pause {
					pauser = w
				}
				mu.Unlock()
				if pause {
					// The pause: this worker stops while it holds the lock.
					say("  %s (token %d) pauses while it holds the lock", w.name, held.Token())
					pausing <- held.Token()
					if srv != nil {
						srv.Expire(w.conn.(*fakezk.Conn))
					} else {
						w.stop()
					}
				wait:
					for others := len(workers) - 1; ; {
						select {
						case <-written:
							break wait
						case <-ended:
							if others--; others == 0 {
								break wait // nobody wrote after the pause
							}
						case <-ctx.Done():
							errs[i] = fmt.Errorf("%s: paused until the end: %w", w.name, ctx.Err())
							return
						}
					}
					// It wakes, unaware, and writes with its old token.
					err = increment(w.name, held.Token())
					if errors.Is(err, fence.ErrFenced) {
						say("  %s wakes and writes: refused: %v", w.name, err)
						mu.Lock()
						refused = append(refused, w.name)
						mu.Unlock()
						err = nil
					}
					return // its session is gone: it stops here
				}
				if err = increment(w.name, held.Token()); err == nil {
					say("  %s (token %d): counter +1", w.name, held.Token())
				}
				if rerr := l.Release(ctx, held); err == nil {
					err = rerr
				}
			}
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", w.name, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	got, err := load(ctx, store, key)
	if err != nil {
		return err
	}
	grew := true
	for i := 1; i < len(tokens); i++ {
		grew = grew && tokens[i] > tokens[i-1]
	}
	want := (*nWorkers - 1) * *rounds // the paused worker's increments are not made
	fmt.Fprintf(out, "summary\n  %d increments went through, counter %d -> %d\n", applied, base, got)
	fmt.Fprintf(out, "  late writes refused by the database: %d %v\n", len(refused), refused)
	checks.Check(got-base == int64(applied), "the counter counts every increment that went through, once (%d = %d)", got-base, applied)
	checks.Check(applied == want, "every increment but the paused one's went through (%d of %d)", applied, want)
	checks.Check(grew, "the stored tokens only grew (%d writes)", len(tokens))
	checks.Check(len(refused) == 1, "the paused worker's late write was refused (%d)", len(refused))
	checks.Check(backgroundErrors.Load() == 0, "no background flow failed (%d)", backgroundErrors.Load())
	return checks.Report(out)
}

// load reads the counter (0 when absent) without writing.
func load(ctx context.Context, store *boltstore.Store, key string) (int64, error) {
	e, _, err := store.Load(ctx, key)
	if err != nil || e.Value == nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(e.Value), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("counter %q: %w", e.Value, err)
	}
	return n, nil
}

// Command partition shows work partitioning: workers, each with its own
// ZooKeeper session, divide a set of queues between them (the layout and
// the division of kazoo's SetPartitioner). Each worker writes to the
// queues it holds through the hold's fence. Then one worker leaves: its
// queues move to the others once the party has been stable for a while,
// and the write it tries afterwards with its old hold is refused by
// ZooKeeper. It checks that every queue is held by exactly one worker at
// each stage, prints a summary and exits 1 if a check failed.
//
//	go run ./examples/partition                 # embedded in-memory ZooKeeper (fakezk)
//	go run ./examples/partition -zk host:2181   # a real server or ensemble
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
	"slices"
	"sync"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/partition"
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
		fmt.Fprintln(os.Stderr, "partition:", err)
		os.Exit(1)
	}
}

// worker is one process: a session, its executor, its member.
type worker struct {
	id string
	ex *executor.Executor
	c  *partition.Client
	m  *partition.Member
}

// lockedWriter serializes writes: the workers report from their
// executors' goroutines while run prints from its own.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func run(ctx context.Context, args []string, w io.Writer) (err error) {
	out := &lockedWriter{w: w}
	fs := flag.NewFlagSet("partition", flag.ContinueOnError)
	fs.SetOutput(out)
	zk := fs.String("zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist); empty: an embedded in-memory server")
	seed := fs.Uint64("seed", 1, "seed of the embedded server")
	workers := fs.Int("workers", 3, "workers, each with its own session (at least 2)")
	queues := fs.Int("queues", 7, "queues to divide (at least 1)")
	path := fs.String("path", "/partition-example", "the partitioner's path")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *workers < 2 || *queues < 1 {
		return errors.New("-workers must be at least 2 and -queues at least 1")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	// connect returns a connection to the server: a real one with -zk, an
	// embedded fakezk otherwise (on the real clock).
	var connect func() (task.Conn, error)
	if *zk == "" {
		srv := fakezk.New(fakezk.Config{Seed: *seed, Async: true, Clock: task.RealClock()})
		defer srv.Close()
		connect = func() (task.Conn, error) { return srv.Connect(fakezk.ConnConfig{}), nil }
		fmt.Fprintln(out, "embedded in-memory ZooKeeper")
	} else {
		// -zk is a connect string, as Curator's and kazoo's:
		// "host:port[,host:port...][/root]". Its root (ZooKeeper's chroot,
		// a node that must exist) is every session's "/": every path is
		// under it.
		servers, chroot, err := zkadapter.ParseConnectString(*zk)
		if err != nil {
			return fmt.Errorf("-zk %q: %w", *zk, err)
		}
		connect = func() (task.Conn, error) {
			// Dial gets a bound of its own: a wrong address fails within seconds,
			// not when the whole run's context ends.
			dctx, dcancel := context.WithTimeout(ctx, 15*time.Second)
			defer dcancel()
			return zkadapter.Dial(dctx, zkadapter.Config{Servers: servers, Root: chroot})
		}
		fmt.Fprintln(out, "ZooKeeper at", *zk)
	}
	// Each run uses a path of its own, so that runs on a shared server do
	// not mix; it is deleted at the end.
	base := fmt.Sprintf("%s-%x", *path, rand.Uint64())
	items := make([]string, *queues)
	for i := range items {
		items[i] = fmt.Sprintf("queue-%d", i)
	}

	// The cleaner, the run's first session and one no fault touches,
	// deletes the run's nodes at the end, whatever happened: deferred
	// first, cleanUp runs last, once every worker's session has closed.
	conn, err := connect()
	if err != nil {
		return err
	}
	cleaner, err := executor.New(executor.Config{Conn: conn})
	if err != nil {
		conn.Close()
		return err
	}
	cleanerDone := make(chan struct{})
	go func() { defer close(cleanerDone); _ = cleaner.Run(context.Background()) }()
	defer func() { cleaner.Close(); <-cleanerDone }()
	// base's parents that are missing (with a -path below "/") are the
	// run's too: made here, before the workers and the data nodes need
	// them, and deleted at the end.
	var parents []string
	for p := task.Parent(base); p != "/"; p = task.Parent(p) {
		st, err := executor.Await(ctx, cleaner, task.Exists(p))
		if err != nil {
			return err
		}
		if st != nil {
			break
		}
		parents = append(parents, p)
	}
	defer func() { err = cleanUp(ctx, cleaner, base, parents, err, out) }()
	for _, p := range slices.Backward(parents) {
		if _, err := executor.Await(ctx, cleaner, task.Create(p, nil, task.Persistent)); err != nil && !errors.Is(err, task.ErrNodeExists) {
			return err
		}
	}

	// changed has a value once any worker has reported a Change since it
	// was last read: one channel for all, so no report is missed.
	changed := make(chan struct{}, 1)
	var running sync.WaitGroup
	runCtx, stopAll := context.WithCancel(context.Background())
	defer func() { stopAll(); running.Wait() }()
	start := func(id string) (*worker, error) {
		conn, err := connect()
		if err != nil {
			return nil, err
		}
		ex, err := executor.New(executor.Config{Conn: conn})
		if err != nil {
			return nil, err
		}
		running.Add(1)
		go func() { defer running.Done(); _ = ex.Run(runCtx) }()
		c, err := partition.NewClient(ex, base, items, partition.WithStable(200*time.Millisecond))
		if err != nil {
			return nil, err
		}
		w := &worker{id: id, ex: ex, c: c}
		on := func(ch partition.Change) { // executor goroutine: must not block
			if len(ch.Acquired) > 0 || len(ch.Released) > 0 {
				fmt.Fprintf(out, "  %s: %s, took %v, gave up %v\n", id, ch.State, ch.Acquired, ch.Released)
			}
			select {
			case changed <- struct{}{}:
			default:
			}
		}
		if w.m, err = c.Join(ctx, id, on); err != nil {
			return nil, err
		}
		return w, nil
	}

	var failed []string
	check := func(ok bool, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if !ok {
			failed = append(failed, msg)
			msg = "FAILED: " + msg
		}
		fmt.Fprintln(out, "check:", msg)
	}

	// balanced waits until every worker of ws is Acquired and, between
	// them, they hold every queue once, as KazooAssign divides the set.
	balanced := func(stage string, ws []*worker) error {
		ids := make([]string, len(ws))
		for i, w := range ws {
			ids[i] = w.id
		}
		slices.Sort(ids)
		for {
			done := true
			for _, w := range ws {
				var got []string
				for _, h := range w.m.Held() {
					got = append(got, h.Item)
				}
				want := partition.KazooAssign(w.id, ids, items)
				if w.m.State() != partition.Acquired || !slices.Equal(got, want) {
					done = false
				}
			}
			if done {
				break
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return fmt.Errorf("%s: waiting for the set to be divided: %w", stage, ctx.Err())
			}
		}
		owners := map[string][]string{}
		for _, w := range ws {
			for _, h := range w.m.Held() {
				owners[h.Item] = append(owners[h.Item], w.id)
			}
		}
		once := len(owners) == len(items)
		for _, o := range owners {
			once = once && len(o) == 1
		}
		check(once, "%s: every queue held by exactly one of %v", stage, ids)
		return nil
	}

	fmt.Fprintf(out, "1. %d workers join, %d queues\n", *workers, *queues)
	ws := make([]*worker, *workers)
	for i := range ws {
		w, err := start(fmt.Sprintf("worker-%d", i+1))
		if err != nil {
			return err
		}
		ws[i] = w
	}
	// The data each queue's holder writes: base/data/<queue>.
	for _, p := range append([]string{base, base + "/data"}, prefixed(base+"/data/", items)...) {
		if _, err := executor.Await(ctx, ws[0].ex, task.Create(p, nil, task.Persistent)); err != nil && !errors.Is(err, task.ErrNodeExists) {
			return err
		}
	}
	if err := balanced("all joined", ws); err != nil {
		return err
	}

	fmt.Fprintln(out, "2. each worker writes to its queues through the fence")
	for _, w := range ws {
		for _, h := range w.m.Held() {
			op := task.SetOp(base+"/data/"+h.Item, []byte("written by "+w.id), task.AnyVersion)
			if _, err := w.c.Fenced(ctx, w.m, h.Item, op); err != nil {
				return fmt.Errorf("%s writing to %s: %w", w.id, h.Item, err)
			}
		}
	}
	check(true, "fenced writes of every holder applied")

	last := ws[len(ws)-1]
	old := last.m.Held()
	fmt.Fprintf(out, "3. %s leaves\n", last.id)
	if err := last.c.Leave(ctx, last.m); err != nil {
		return err
	}
	if err := balanced(last.id+" left", ws[:len(ws)-1]); err != nil {
		return err
	}
	if len(old) > 0 {
		h := old[0]
		_, err := executor.Await(ctx, last.ex, h.Fenced(task.SetOp(base+"/data/"+h.Item, []byte("late"), task.AnyVersion)))
		check(errors.Is(err, partition.ErrLost), "%s's late write to %s with its old hold (token %d) refused: %v", last.id, h.Item, h.Token, err)
	}
	for _, w := range ws[:len(ws)-1] {
		if err := w.c.Leave(ctx, w.m); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "summary: %d checks failed\n", len(failed))
	if len(failed) > 0 {
		return fmt.Errorf("%d checks failed: %v", len(failed), failed)
	}
	return nil // cleanUp says OK
}

func prefixed(prefix string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = prefix + s
	}
	return out
}

// cleanupTimeout bounds the clean-up at the end of a run (cleanUp), which
// runs even when the run's context has ended.
const cleanupTimeout = 5 * time.Second

// cleanUp ends a run, on success and on failure alike: it deletes root
// and every node under it on ex's session (Executor.DeleteAll), then each of
// parents (root's, bottom up) unless another run has a node under it
// (NotEmpty: that run deletes it), within cleanupTimeout of its own, and
// says so if there was anything to delete, so that a run on a real
// server leaves nothing behind. It returns runErr joined with the
// clean-up's error; when both are nil it prints the run's last line, OK.
// Call it once every other session of the run has closed (their
// ephemeral nodes are gone with them), so that no process creates again
// what it deletes.
func cleanUp(ctx context.Context, ex *executor.Executor, root string, parents []string, runErr error, out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	n, err := ex.DeleteAll(ctx, root)
	if err == nil && n > 0 {
		fmt.Fprintf(out, "clean-up: deleted %s and the %d nodes under it\n", root, n-1)
	}
	for _, p := range parents {
		if err != nil {
			break
		}
		_, err = executor.Await(ctx, ex, task.Delete(p, task.AnyVersion))
		if errors.Is(err, task.ErrNotEmpty) || errors.Is(err, task.ErrNoNode) {
			err = nil
			break
		}
		if err == nil {
			fmt.Fprintf(out, "clean-up: deleted %s, made by the run\n", p)
		}
	}
	if err != nil {
		top := root
		if len(parents) > 0 {
			top = parents[len(parents)-1]
		}
		fmt.Fprintf(out, "clean-up FAILED: %v (what is left is under %s)\n", err, top)
		return errors.Join(runErr, fmt.Errorf("clean-up of %s: %w", top, err))
	}
	if runErr == nil {
		fmt.Fprintln(out, "OK")
	}
	return runErr
}

// Command quickstart tells the library's story in one run, on an embedded
// in-memory ZooKeeper (fakezk) by default or on a real server or ensemble
// with -zk:
//
//  1. IDs: a pool of workers, each with its own session and executor,
//     draws unique IDs concurrently, while a replicated persistence service
//     elects a leader that keeps the reserved high-water mark durable; the
//     leader is killed mid-run and a backup takes over.
//  2. Lock: the workers take a lock around a critical section and write
//     with fencing tokens, so a holder that lost the lock cannot write.
//  3. Tasks: a master assigns tasks to the workers; one worker dies and
//     its tasks are reassigned.
//  4. Config: the configuration changes and the workers reload themselves.
//
// On the embedded server, faults are injected as it runs (connection
// losses, session expiries). At the end it deletes the nodes it made,
// prints a verified summary and exits 1 if any check failed.
//
//	go run ./examples/quickstart                   # embedded ZooKeeper (fakezk)
//	go run ./examples/quickstart -zk host:2181     # a real server or ensemble
//	go run ./examples/quickstart -zk host:2181/app # under the node /app (a chroot; it must exist)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

type options struct {
	servers  string // -zk
	seed     uint64
	workers  int
	ids      int
	sections int
	tasks    int
	timeout  time.Duration
}

func parse(args []string, out io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.servers, "zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist); empty runs an embedded fakezk")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the embedded fakezk")
	fs.IntVar(&o.workers, "workers", 4, "concurrent workers, each with its own session")
	fs.IntVar(&o.ids, "ids", 250, "IDs each worker draws")
	fs.IntVar(&o.sections, "sections", 25, "critical sections each worker runs under the lock")
	fs.IntVar(&o.tasks, "tasks", 40, "tasks submitted to the master")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.workers < 2 || o.ids < 1 || o.sections < 1 || o.tasks < 1 {
		return nil, errors.New("-workers must be at least 2, -ids, -sections and -tasks at least 1")
	}
	return o, nil
}

// story holds what every chapter shares.
type story struct {
	o       *options
	out     io.Writer
	srv     *fakezk.Server // nil on a real server
	root    string
	admin   *process   // setup and final reads
	workers []*process // the worker pool every chapter uses
	procs   []*process // every process started, stopped at the end
	mu      sync.Mutex
	faults  []string
	checks  []string
	failed  []string
}

// connect starts a process of the story, stopped at the end.
func (s *story) connect(ctx context.Context, name string) (*process, error) {
	p, err := start(ctx, s.srv, s.o.servers, name)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.procs = append(s.procs, p)
	return p, nil
}

// fault injects a fault on c when the server is embedded (a real server
// gets none) and says so.
func (s *story) fault(c *process, name string, do func(*fakezk.Server, *fakezk.Conn)) {
	if s.srv == nil {
		return
	}
	do(s.srv, c.conn.(*fakezk.Conn))
	s.mu.Lock()
	s.faults = append(s.faults, name+" ("+c.name+")")
	s.mu.Unlock()
	fmt.Fprintf(s.out, "  fault: %s on %s\n", name, c.name)
}

func drop(applied bool) func(*fakezk.Server, *fakezk.Conn) {
	return func(srv *fakezk.Server, c *fakezk.Conn) { srv.Drop(c, applied) }
}

func expire(srv *fakezk.Server, c *fakezk.Conn) { srv.Expire(c) }

// check records a verified fact, or a failure.
func (s *story) check(ok bool, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if ok {
		s.checks = append(s.checks, line)
	} else {
		s.failed = append(s.failed, line)
	}
}

func (s *story) progress(format string, args ...any) {
	fmt.Fprintf(s.out, "  "+format+"\n", args...)
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
	where, root := "ZooKeeper at "+o.servers, fmt.Sprintf("/quickstart-%x", rand.Uint64())
	if o.servers == "" {
		srv = fakezk.New(fakezk.Config{Seed: o.seed})
		defer srv.Close()
		where, root = fmt.Sprintf("embedded ZooKeeper (fakezk), seed %d", o.seed), "/quickstart"
	}
	fmt.Fprintf(out, "%s, %d workers, root %s\n", where, o.workers, root)
	// The cleaner, the run's first session and one no fault touches,
	// deletes the run's nodes at the end, whatever happened: deferred
	// first, cleanUp runs last, once every other process has stopped.
	cleaner, err := start(ctx, srv, o.servers, "cleaner")
	if err != nil {
		return err
	}
	defer cleaner.stop()
	defer func() { err = cleanUp(ctx, cleaner.ex, root, err, out) }()
	s := &story{o: o, out: out, srv: srv, root: root}
	defer func() {
		for _, p := range slices.Backward(s.procs) {
			p.stop()
		}
	}()

	if s.admin, err = s.connect(ctx, "admin"); err != nil {
		return err
	}
	if err := s.mkdir(ctx, s.root); err != nil {
		return err
	}
	for i := range o.workers {
		w, err := s.connect(ctx, fmt.Sprintf("worker-%d", i+1))
		if err != nil {
			return err
		}
		s.workers = append(s.workers, w)
	}
	chapters := []struct {
		title string
		run   func(context.Context, *story) error
	}{
		{"unique IDs, with a replicated persistence service", idsChapter},
		{"a lock with fencing tokens", lockChapter},
		{"a master assigns tasks to workers, and a worker dies", tasksChapter},
		{"the configuration changes and the workers reload themselves", configChapter},
	}
	for i, ch := range chapters {
		fmt.Fprintf(out, "%d. %s\n", i+1, ch.title)
		if err := ch.run(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", ch.title, err)
		}
	}
	return s.summarize()
}

// mkdir creates a persistent node if it is missing.
func (s *story) mkdir(ctx context.Context, path string) error {
	_, err := executor.Await(ctx, s.admin.ex, task.Create(path, nil, task.Persistent))
	if errors.Is(err, task.ErrNodeExists) {
		err = nil
	}
	return err
}

// eachWorker runs f for every live worker concurrently and joins their
// errors.
func (s *story) eachWorker(f func(i int, w *process) error) error {
	errs := make([]error, len(s.workers))
	var wg sync.WaitGroup
	for i, w := range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(i, w); err != nil {
				errs[i] = fmt.Errorf("%s: %w", w.name, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (s *story) summarize() error {
	fmt.Fprintln(s.out, "summary")
	if len(s.faults) > 0 {
		fmt.Fprintf(s.out, "  faults injected: %d (%s)\n", len(s.faults), strings.Join(s.faults, ", "))
	} else {
		fmt.Fprintln(s.out, "  faults injected: 0 (real server)")
	}
	for _, c := range s.checks {
		fmt.Fprintln(s.out, "  ok:", c)
	}
	if n := backgroundErrors.Load(); n > 0 {
		s.failed = append(s.failed, fmt.Sprintf("%d background flows failed (logged above)", n))
	}
	for _, f := range s.failed {
		fmt.Fprintln(s.out, "  FAILED:", f)
	}
	if len(s.failed) > 0 {
		return fmt.Errorf("%d check(s) failed", len(s.failed))
	}
	return nil // cleanUp says OK
}

// Command discovery shows service discovery in Apache Curator's layout:
// three instances of a "web" service register (each on a session of its
// own), a client follows the service with a cache and spreads requests
// over the instances with a round-robin provider; one instance is
// reported failing and is skipped, another unregisters and the cache drops
// it. The nodes are the ones Curator's ServiceDiscovery writes and reads,
// so Java services registered with Curator under the same base path show
// up here too. It checks what it prints and exits 1 if a check failed.
//
//	go run ./examples/discovery                  # embedded in-memory ZooKeeper (fakezk)
//	go run ./examples/discovery -zk host:2181    # a real server or ensemble
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/discovery"
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
		fmt.Fprintln(os.Stderr, "discovery:", err)
		os.Exit(1)
	}
}

// zone is the payload each instance carries, as typed JSON.
type zone struct {
	Zone string `json:"zone"`
}

// session is one client: an executor on a session of its own, run on a
// goroutine until stop.
type session struct {
	ex   *executor.Executor
	stop func()
}

// connector opens sessions on the embedded server, or on the servers of
// -zk under its root.
type connector struct {
	servers []string
	chroot  string         // the root of -zk's connect string, "" for none
	srv     *fakezk.Server // nil on a real server
}

func (c *connector) open(ctx context.Context) (*session, error) {
	cfg := executor.Config{}
	if c.srv != nil {
		cfg.Conn, cfg.Clock = c.srv.Connect(fakezk.ConnConfig{}), c.srv.Clock()
	} else {
		// Dial gets a bound of its own: a wrong address fails within seconds,
		// not when the whole run's context ends.
		dctx, dcancel := context.WithTimeout(ctx, 15*time.Second)
		conn, err := zkadapter.Dial(dctx, zkadapter.Config{Servers: c.servers, Root: c.chroot, SessionTimeout: 10 * time.Second})
		dcancel()
		if err != nil {
			return nil, err
		}
		cfg.Conn = conn
	}
	ex, err := executor.New(cfg)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(runCtx) }()
	return &session{ex: ex, stop: func() { cancel(); <-done; ex.Close() }}, nil
}

func run(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("discovery", flag.ContinueOnError)
	fs.SetOutput(out)
	zk := fs.String("zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist; default: an embedded in-memory server)")
	seed := fs.Uint64("seed", 1, "seed of the embedded server")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	conns := &connector{}
	if *zk == "" {
		conns.srv = fakezk.New(fakezk.Config{Seed: *seed, Async: true, Clock: task.RealClock()})
		defer conns.srv.Close()
		fmt.Fprintln(out, "embedded ZooKeeper (fakezk)")
	} else {
		// -zk is a connect string, as Curator's and kazoo's:
		// "host:port[,host:port...][/root]". Its root (ZooKeeper's chroot,
		// a node that must exist) is every session's "/": every path is
		// under it.
		if conns.servers, conns.chroot, err = zkadapter.ParseConnectString(*zk); err != nil {
			return fmt.Errorf("-zk %q: %w", *zk, err)
		}
		fmt.Fprintln(out, "ZooKeeper at", *zk)
	}
	// The run's nodes go under a root of their own, deleted at the end.
	root := fmt.Sprintf("/discovery-example-%d", task.RealClock().Now().UnixNano())
	base := root + "/services"

	// The cleaner, the run's first session and one no fault touches,
	// deletes the run's nodes at the end, whatever happened: deferred
	// first, cleanUp runs last, once every other session has closed.
	cleaner, err := conns.open(ctx)
	if err != nil {
		return err
	}
	defer cleaner.stop()
	defer func() { err = cleanUp(ctx, cleaner.ex, root, err, out) }()

	// Three instances register, each on its own session.
	var regs []*discovery.Registration
	var clients []*discovery.Client
	for i, z := range []string{"eu", "us", "eu"} {
		s, err := conns.open(ctx)
		if err != nil {
			return err
		}
		defer s.stop()
		c, err := discovery.NewClient(s.ex, base)
		if err != nil {
			return err
		}
		in, err := discovery.WithPayload(discovery.Instance{Name: "web", ID: fmt.Sprintf("web-%d", i+1),
			Address: fmt.Sprintf("10.0.0.%d", i+1), Port: 8080}, zone{Zone: z})
		if err != nil {
			return err
		}
		r, err := c.Register(ctx, in)
		if err != nil {
			return err
		}
		regs, clients = append(regs, r), append(clients, c)
		data, _ := json.Marshal(r.Instance())
		fmt.Fprintf(out, "registered %s: %s\n", r.Path(), data)
	}

	// A client follows the service and spreads requests over it.
	s, err := conns.open(ctx)
	if err != nil {
		return err
	}
	defer s.stop()
	finder, _ := discovery.NewClient(s.ex, base)
	cache, err := finder.StartCache(ctx, "web")
	if err != nil {
		return err
	}
	defer cache.Stop(ctx)
	provider, err := cache.Provider(discovery.WithDownThreshold(1), discovery.WithDownTimeout(time.Minute))
	if err != nil {
		return err
	}
	var failed []string
	check := func(ok bool, format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		if !ok {
			failed = append(failed, line)
			line = "FAILED: " + line
		}
		fmt.Fprintln(out, "check:", line)
	}
	pick := func(n int) []string {
		var got []string
		for range n {
			in, err := provider.Get()
			if err != nil {
				got = append(got, err.Error())
				continue
			}
			z, _ := discovery.Payload[zone](in)
			got = append(got, in.ID+"@"+z.Zone)
		}
		return got
	}
	got := pick(3)
	fmt.Fprintln(out, "round robin:", got)
	check(slices.Equal(got, []string{"web-1@eu", "web-2@us", "web-3@eu"}), "each instance served once in turn")

	provider.NoteError(discovery.Instance{ID: "web-2"})
	got = pick(4)
	fmt.Fprintln(out, "web-2 reported failing:", got)
	check(!slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "web-2") }), "web-2 skipped while down")

	if err := clients[0].Unregister(ctx, regs[0]); err != nil {
		return err
	}
	for ids := names(cache.Instances()); !slices.Equal(ids, []string{"web-2", "web-3"}); ids = names(cache.Instances()) {
		if _, err := cache.Next(ctx); err != nil {
			return fmt.Errorf("waiting for web-1 to go: %w", err)
		}
	}
	got = pick(2)
	fmt.Fprintln(out, "web-1 unregistered:", got)
	check(slices.Equal(got, []string{"web-3@eu", "web-3@eu"}), "only web-3 left up")

	ins, err := finder.Query(ctx, "web")
	if err != nil {
		return err
	}
	check(slices.Equal(names(ins), []string{"web-2", "web-3"}), "a one-off query lists %v", names(ins))
	for i, r := range regs[1:] {
		if err := clients[i+1].Unregister(ctx, r); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d checks failed", len(failed))
	}
	fmt.Fprintln(out, "all checks passed")
	return nil // cleanUp says OK
}

func names(ins []discovery.Instance) []string {
	out := make([]string, len(ins))
	for i, in := range ins {
		out[i] = in.ID
	}
	return out
}

// cleanupTimeout bounds the clean-up at the end of a run (cleanUp), which
// runs even when the run's context has ended.
const cleanupTimeout = 5 * time.Second

// cleanUp ends a run, on success and on failure alike: it deletes root
// and every node under it on ex's session (Executor.DeleteAll), within
// cleanupTimeout of its own, and says so if there was anything to
// delete, so that a run on a real server leaves nothing behind. It
// returns runErr joined with the clean-up's error; when both are nil it
// prints the run's last line, OK. Call it once every other session of
// the run has closed (their ephemeral nodes are gone with them), so that
// no process creates again what it deletes.
func cleanUp(ctx context.Context, ex *executor.Executor, root string, runErr error, out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	n, err := ex.DeleteAll(ctx, root)
	switch {
	case err != nil:
		fmt.Fprintf(out, "clean-up FAILED: %v (%d nodes deleted, the rest left under %s)\n", err, n, root)
		return errors.Join(runErr, fmt.Errorf("clean-up of %s: %w", root, err))
	case n > 0:
		fmt.Fprintf(out, "clean-up: deleted %s and the %d nodes under it\n", root, n-1)
	}
	if runErr == nil {
		fmt.Fprintln(out, "OK")
	}
	return runErr
}

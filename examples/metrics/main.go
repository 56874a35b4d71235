// Command metrics serves the runtime's metrics to Prometheus through
// OpenTelemetry (executor/otelzk and OpenTelemetry's Prometheus exporter)
// while a few clients work: each increments a shared counter by
// compare-and-set with retries (one increment per client and round meets
// a conflicting write and retries) and looks up nodes that are not there. On
// the embedded in-memory ZooKeeper (fakezk, the default) it also drops
// connections and expires a session, so that retries, suspended time and
// session transitions show.
//
// It scrapes its own /metrics after each of two rounds and checks that the
// series are there with their labels and that their counts moved, prints
// a verified summary, and then, with -serve, keeps serving until
// interrupted or the time is up:
//
//	cd examples/metrics                 # a module of its own, for OpenTelemetry and Prometheus
//	go run . -serve 1h                  # embedded ZooKeeper
//	go run . -zk host:2181 -serve 1h    # a real server
//	curl -s localhost:9464/metrics | grep -E '^(db_client|zookeeper|zkflow)'
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/executor/otelzk"
	"github.com/zkflow/zkflow/fakezk"
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
		fmt.Fprintf(os.Stderr, "metrics: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	servers string         // -zk: a real server or ensemble, or empty
	addrs   []string       // the servers of -zk's connect string
	chroot  string         // the root of -zk's connect string, "" for none
	seed    uint64         // -seed: the embedded server's seed
	srv     *fakezk.Server // the embedded server, when servers is empty
	listen  string
	clients int
	incs    int
	serve   time.Duration
	timeout time.Duration
}

func parse(args []string, out io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("metrics", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.servers, "zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist); empty runs on an embedded fakezk")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the embedded server")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:9464", "address to serve /metrics on (port 0: any free port)")
	fs.IntVar(&o.clients, "clients", 3, "clients, each with its own session")
	fs.IntVar(&o.incs, "incs", 20, "increments of the counter per client and round")
	fs.DurationVar(&o.serve, "serve", 0, "keep serving /metrics this long after the rounds (0: exit)")
	fs.DurationVar(&o.timeout, "timeout", time.Minute, "give up the rounds after this long")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.clients < 1 || o.incs < 1 || o.serve < 0 {
		return nil, errors.New("-clients and -incs must be at least 1, -serve not negative")
	}
	if o.servers != "" {
		// -zk is a connect string, as Curator's and kazoo's:
		// "host:port[,host:port...][/root]". Its root (ZooKeeper's chroot,
		// a node that must exist) is every session's "/": every path is
		// under it.
		var err error
		if o.addrs, o.chroot, err = zkadapter.ParseConnectString(o.servers); err != nil {
			return nil, fmt.Errorf("-zk %q: %w", o.servers, err)
		}
	} else {
		// On the wall clock, like a real server; executors on its Conns
		// take its clock.
		o.srv = fakezk.New(fakezk.Config{Seed: o.seed})
	}
	return o, nil
}

// client is one session with its executor, observed.
type client struct {
	conn task.Conn
	ex   *executor.Executor
	done chan struct{}
}

func run(ctx context.Context, args []string, out io.Writer) (err error) {
	o, err := parse(args, out)
	if err != nil {
		return err
	}
	if o.srv != nil {
		defer o.srv.Close()
	}

	// OpenTelemetry: a meter provider whose reader is the Prometheus
	// exporter, registered in a registry of our own, and the Observer.
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	defer mp.Shutdown(context.Background())
	obs, err := otelzk.New(otelzk.Config{MeterProvider: mp})
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(ln)
	}()
	defer func() {
		_ = hs.Close()
		<-served
	}()
	url := "http://" + ln.Addr().String() + "/metrics"
	where := fmt.Sprintf("embedded ZooKeeper (fakezk), seed %d", o.seed)
	if o.srv == nil {
		where = "ZooKeeper at " + o.servers
	}
	fmt.Fprintf(out, "metrics on %s (%s)\n", where, url)

	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	var clients []*client
	defer func() {
		for _, cl := range clients {
			cl.ex.Close()
			<-cl.done
		}
	}()
	for range o.clients {
		cl, err := connect(rctx, o, obs)
		if err != nil {
			return err
		}
		clients = append(clients, cl)
	}
	root := "/metrics"
	if o.srv == nil { // a shared server: a root of this run's own
		root = fmt.Sprintf("/metrics-%016x", rand.Uint64())
	}
	// At the end, whatever happened, the first client deletes the run's
	// nodes (the clients make no ephemeral node, and nothing runs on them
	// any more by then); deferred after the clients' close, it runs before.
	defer func() { err = cleanUp(ctx, clients[0].ex, root, err, out) }()
	counter := root + "/counter"
	for _, p := range []string{root, counter} {
		if _, err := executor.Await(rctx, clients[0].ex, task.Create(p, make([]byte, 8), task.Persistent)); err != nil && !errors.Is(err, task.ErrNodeExists) {
			return err
		}
	}

	var failed []string
	check := func(ok bool, format string, a ...any) {
		line := fmt.Sprintf(format, a...)
		if !ok {
			line = "FAILED: " + line
			failed = append(failed, line)
		}
		fmt.Fprintln(out, "  "+line)
	}
	var prev scrape
	for round := 1; round <= 2; round++ {
		if err := work(rctx, o, clients, counter, round == 2); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
		s, err := get(rctx, url)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "round %d: scraped %d series\n", round, len(s))
		verify(check, s, prev, o, round)
		prev = s
	}
	check(backgroundErrors.Load() == 0, "no background flow failed (%d)", backgroundErrors.Load())
	if len(failed) > 0 {
		return fmt.Errorf("%d checks failed", len(failed))
	}
	if o.serve > 0 {
		fmt.Fprintf(out, "serving %s for %s\n", url, o.serve)
		t := time.NewTimer(o.serve)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	return nil // cleanUp says OK
}

// connect opens an observed session on the target: fakezk's Conn or
// zkadapter's, each given the Observer for the connection's facts, and an
// executor given it for the rest.
func connect(ctx context.Context, o *options, obs *task.Observer) (*client, error) {
	var conn task.Conn
	if o.srv != nil {
		conn = o.srv.Connect(fakezk.ConnConfig{Timeout: 4 * time.Second, Observer: obs})
	} else {
		// Dial gets a bound of its own: a wrong address fails within seconds,
		// not when the whole run's context ends.
		dctx, dcancel := context.WithTimeout(ctx, 15*time.Second)
		zc, err := zkadapter.Dial(dctx, zkadapter.Config{Servers: o.addrs, Root: o.chroot, Observer: obs})
		dcancel()
		if err != nil {
			return nil, err
		}
		conn = zc
	}
	ex, err := executor.New(executor.Config{Conn: conn, Observer: obs, OnError: onBackgroundError})
	if err != nil {
		return nil, err
	}
	cl := &client{conn: conn, ex: ex, done: make(chan struct{})}
	go func() {
		defer close(cl.done)
		_ = ex.Run(context.Background())
	}()
	return cl, nil
}

// increment adds one to the 8-byte counter by compare-and-set: a read,
// then a write with the version read, again on a conflict or a lost
// connection.
func increment(path string) task.Task[int64] {
	cas := c.Then(task.Get(path), func(d task.Data) task.Task[int64] {
		n := int64(binary.BigEndian.Uint64(d.Data)) + 1
		b := binary.BigEndian.AppendUint64(nil, uint64(n))
		return c.Map(task.Set(path, b, d.Stat.Version), func(task.Stat) int64 { return n })
	})
	return c.Retry(cas, c.Policy{On: []error{task.ErrBadVersion, task.ErrConnectionLoss, task.ErrNotSent},
		Backoff: c.Backoff{Initial: time.Millisecond, Max: 20 * time.Millisecond, Multiplier: 2, Jitter: 0.5}})
}

// contended is one increment whose first compare-and-set meets a write
// made between its read and its write (the client makes it itself, an
// unconditional write of the same value), so it fails with BadVersion and
// is retried: a conflict on demand, where the clients' own rarely
// collide.
func contended(path string) task.Task[int64] {
	first := true
	cas := c.Then(task.Get(path), func(d task.Data) task.Task[int64] {
		n := int64(binary.BigEndian.Uint64(d.Data)) + 1
		b := binary.BigEndian.AppendUint64(nil, uint64(n))
		set := c.Map(task.Set(path, b, d.Stat.Version), func(task.Stat) int64 { return n })
		if !first {
			return set
		}
		first = false
		return c.Then(task.Set(path, d.Data, task.AnyVersion), func(task.Stat) task.Task[int64] { return set })
	})
	return c.Retry(cas, c.Policy{On: []error{task.ErrBadVersion}})
}

// work runs a round: every client increments the counter o.incs times
// (one of them contended), and looks up a node that is not there; with faults, on the embedded
// server, the first client's connection drops twice and the last one's
// session expires.
func work(ctx context.Context, o *options, clients []*client, counter string, faults bool) error {
	srv := o.srv
	if faults && srv != nil {
		srv.Drop(clients[0].conn.(*fakezk.Conn), false)
		srv.Drop(clients[0].conn.(*fakezk.Conn), true)
		srv.Expire(clients[len(clients)-1].conn.(*fakezk.Conn))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(clients))
	for i, cl := range clients {
		wg.Go(func() {
			for j := range o.incs {
				t := increment(counter)
				if j == 0 {
					t = contended(counter)
				}
				if _, err := executor.AwaitAcrossExpiry(ctx, cl.ex, t); err != nil {
					errs[i] = err
					return
				}
			}
			if st, err := executor.AwaitAcrossExpiry(ctx, cl.ex, task.Exists(counter+"-missing")); err != nil || st != nil {
				errs[i] = fmt.Errorf("exists of a missing node: %v, %v", st, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// backgroundErrors counts the errors onBackgroundError logged; the
// summary checks that there were none.
var backgroundErrors atomic.Int64

// onBackgroundError receives the errors of flows nobody waits for
// (executor.Config.OnError). The example drops connections and expires a
// session on purpose, so a flow that failed because its session ended
// (task.ErrClosed, task.ErrSessionExpired) is expected; anything else is
// logged and counted.
func onBackgroundError(err error) {
	if errors.Is(err, task.ErrClosed) || errors.Is(err, task.ErrSessionExpired) {
		return
	}
	backgroundErrors.Add(1)
	slog.Error("background flow failed", "err", err)
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

// Command bench is the benchmark harness: it measures the library's
// recipes and runtime on a real ZooKeeper server and, in the same run on
// the same server, the same work done with Apache Curator, kazoo and plain
// go-zookeeper, alternating the library's runs with the peers' (A B C D
// A B C D ...), over loopback and over an emulated network (a proxy
// delaying each direction, -delay), and reports throughput, latency
// quantiles, client CPU per operation, round trips per operation and the
// ratios ours/peer, as a table, JSON, SVG plots and the results section
// of bench/README.md.
//
//	go run ./bench                       # starts its own server (tmpfs, forceSync=no)
//	go run ./bench -server-defaults      # the same with ZooKeeper's default durability
//	go run ./bench -zk 127.0.0.1:2181    # an existing server
//	go run ./bench -scenarios lock,cas -pairs 5 -duration 3s
//	go run ./bench -scenarios lock,cas -delay 0  # the proxy's own cost
//	go run ./bench -setup                # install the peers first (apt-get)
//	go run ./bench -wire                 # go-zookeeper against fakezk on the wire and the real server
//
// Scenarios are registered in scenario.go and scenario_*.go (files
// initialize in name order, which is the order they run in); see
// bench/README.md.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkflow/zkflow/internal/peers"
)

type config struct {
	ZK             string
	ServerDefaults bool
	Scenarios      string
	Peers          string
	Pairs          int
	Warmup         time.Duration
	ServerWarmup   time.Duration
	Duration       time.Duration
	Out            string
	Readme         string
	Section        string
	Cache          string
	Setup          bool
	Clients        []int
	// Networks are the columns to run: loopback (clients dial the server)
	// and emulated (clients dial a proxy that delays each direction by
	// Delay).
	Networks []string
	Delay    time.Duration
	// Wire runs the comparison of fakezk on the wire with the real server
	// (wire.go) instead of the scenarios.
	Wire bool
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cache, _ := os.UserCacheDir()
	if cache == "" {
		cache = os.TempDir()
	}
	fs.StringVar(&c.ZK, "zk", "", "an existing ZooKeeper server, host:port; empty starts a standalone server from Debian's jars")
	fs.BoolVar(&c.ServerDefaults, "server-defaults", false, "start the server with ZooKeeper's default settings (forceSync=yes, data on disk) instead of tmpfs and forceSync=no")
	fs.StringVar(&c.Scenarios, "scenarios", "all", "comma-separated scenarios to run: lock, cas, blocks, pipeline, masterworker, config, sim, or all of those; rwlock, semaphore, trylock, queue, election, discovery, or recipes for those six")
	fs.StringVar(&c.Peers, "peers", "curator,kazoo,gozk", "comma-separated peers to run alongside (empty: none)")
	fs.IntVar(&c.Pairs, "pairs", 3, "pairs: how many times each run of ours and of each peer alternates")
	fs.DurationVar(&c.Warmup, "warmup", time.Second, "warm-up before measuring, in each run")
	fs.DurationVar(&c.ServerWarmup, "server-warmup", 10*time.Second, "load the server (locks and CAS from 4 sessions, discarded) before the first run, so that no run meets a cold JIT")
	fs.DurationVar(&c.Duration, "duration", 3*time.Second, "measuring time of each run")
	fs.StringVar(&c.Out, "out", "bench/results", "directory for results.json, results.md and the SVG plots")
	fs.StringVar(&c.Readme, "readme", "", "also replace the results section of this README (make bench: bench/README.md)")
	fs.StringVar(&c.Section, "section", "", "the README section to replace (default: defaults with -server-defaults, recipes for scenarios of that group only, main otherwise)")
	fs.StringVar(&c.Cache, "cache", filepath.Join(cache, "zkflow-bench"), "directory where the peer programs are built")
	clients := fs.String("clients", "", "comma-separated client counts replacing those of the scenarios that vary them (lock, cas, blocks); empty: their own (lock and cas 1,4,16,64; blocks 1,4,16)")
	networks := fs.String("networks", loopback+","+emulated, "comma-separated networks to run: loopback (clients dial the server), emulated (clients dial a proxy delaying each direction by -delay)")
	fs.DurationVar(&c.Delay, "delay", 500*time.Microsecond, "one-way delay of the emulated network (0: the proxy alone, to measure its own cost)")
	fs.BoolVar(&c.Wire, "wire", false, "instead of the scenarios, measure a go-zookeeper client's get and set (1 and 16 goroutines on one session) against fakezk on the wire and against the real server, alternating (-out defaults to bench/results-wire, -section to wire)")
	fs.BoolVar(&c.Setup, "setup", false, "install the peers and ZooKeeper with apt-get first (as root, or with sudo)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	outSet := false
	fs.Visit(func(f *flag.Flag) { outSet = outSet || f.Name == "out" })
	if c.Wire && !outSet {
		c.Out = "bench/results-wire"
	}
	if *clients != "" {
		for _, f := range strings.Split(*clients, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > 1000 {
				return c, fmt.Errorf("-clients %q: want counts from 1 to 1000", *clients)
			}
			c.Clients = append(c.Clients, n)
		}
	}
	for _, f := range strings.Split(*networks, ",") {
		switch f = strings.TrimSpace(f); f {
		case loopback, emulated:
			if !contains(c.Networks, f) {
				c.Networks = append(c.Networks, f)
			}
		case "":
		default:
			return c, fmt.Errorf("-networks %q: want loopback and/or emulated", *networks)
		}
	}
	if len(c.Networks) == 0 {
		return c, errors.New("-networks: empty")
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	switch {
	case c.Pairs < 1:
		return c, fmt.Errorf("-pairs %d: need at least 1", c.Pairs)
	case c.Duration <= 0:
		return c, fmt.Errorf("-duration %v: need more than 0", c.Duration)
	case c.Warmup < 0:
		return c, fmt.Errorf("-warmup %v: negative", c.Warmup)
	case c.Delay < 0:
		return c, fmt.Errorf("-delay %v: negative", c.Delay)
	case c.ServerWarmup < 0:
		return c, fmt.Errorf("-server-warmup %v: negative", c.ServerWarmup)
	case c.Out == "":
		return c, errors.New("-out: empty")
	}
	return c, nil
}

func main() {
	// The emulated network's proxy is this binary started again.
	if ran, code := proxyMain(os.Stdin, os.Stdout, os.Stderr); ran {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args[1:], stderr)
	if err != nil {
		return err
	}
	if cfg.Setup {
		if err := setup(ctx, stderr); err != nil {
			return err
		}
	}
	if cfg.Wire {
		cfg.Section = cmp.Or(cfg.Section, "wire")
		return runWire(ctx, cfg, args, stdout, stderr)
	}
	scens, err := selectScenarios(cfg.Scenarios)
	if err != nil {
		return err
	}
	if cfg.Section == "" {
		cfg.Section = cmp.Or(group(scens), "main")
		if cfg.ServerDefaults {
			cfg.Section = "defaults"
		}
	}
	scens = withClients(scens, cfg.Clients)
	wanted, err := parsePeers(cfg.Peers)
	if err != nil {
		return err
	}

	addr, settings := cfg.ZK, "existing server at "+cfg.ZK+" (its settings are its own)"
	if needsServer(scens) && addr == "" {
		s := serverSettings{Defaults: cfg.ServerDefaults}
		fmt.Fprintf(stderr, "starting ZooKeeper: %s\n", s.Describe())
		srv, err := startServer(ctx, s)
		if err != nil {
			return err
		}
		defer srv.Close()
		addr, settings = srv.Addr, s.Describe()
	}

	p := &plan{Addr: addr, Scenarios: scens, Pairs: cfg.Pairs, Warmup: cfg.Warmup, Duration: cfg.Duration,
		SessionTimeout: 10 * time.Second, Programs: map[peers.Kind]*peers.Program{}, Skipped: map[peers.Kind]string{},
		Root: fmt.Sprintf("/zkbench-%08x", rand.Uint32())}
	if needsServer(scens) {
		for _, name := range cfg.Networks {
			n := network{Name: name, Addr: addr}
			if name == emulated {
				px, err := startProxy(ctx, addr, cfg.Delay)
				if err != nil {
					return err
				}
				defer px.Close()
				n.Delay, n.Addr = cfg.Delay, px.Addr
			}
			p.Nets = append(p.Nets, n)
		}
	}
	for _, k := range usedPeers(scens, wanted) {
		prog, err := peers.Build(k, cfg.Cache)
		if err != nil {
			p.Skipped[k] = err.Error()
			fmt.Fprintf(stderr, "skipping peer %s: %v\n", k, err)
			continue
		}
		p.Programs[k] = prog
	}

	rep := &report{Command: "go run ./bench " + strings.Join(args[1:], " "), Date: time.Now(), Server: settings,
		Pairs: cfg.Pairs, Warmup: cfg.Warmup, Duration: cfg.Duration, Skipped: p.Skipped, scenarios: scens,
		Nets: p.Nets}
	rep.Machine = describeMachine(ctx, addr)
	if needsServer(scens) && cfg.ServerWarmup > 0 {
		fmt.Fprintf(stderr, "warming the server up for %v\n", cfg.ServerWarmup)
		if err := warmServer(ctx, p, cfg.ServerWarmup); err != nil {
			return fmt.Errorf("server warm-up: %w", err)
		}
		rep.ServerWarmup = cfg.ServerWarmup
	}
	pr := newProgress(stderr, p.runs())
	rep.Samples = execute(ctx, p, pr)
	pr.close()
	rep.Machine.LoadAfter = loadavg()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := rep.write(cfg.Out, cfg.Readme, cfg.Section); err != nil {
		return err
	}
	fmt.Fprint(stdout, rep.markdown(cfg.Out))
	return nil
}

func needsServer(scens []*scenario) bool {
	for _, s := range scens {
		if !s.Sim {
			return true
		}
	}
	return false
}

func parsePeers(list string) ([]peers.Kind, error) {
	var out []peers.Kind
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		k := peers.Kind(name)
		if !contains(peers.Kinds, k) {
			return nil, fmt.Errorf("unknown peer %q (have curator, kazoo, gozk)", name)
		}
		out = append(out, k)
	}
	return out, nil
}

// usedPeers are the wanted peers some scenario runs.
func usedPeers(scens []*scenario, wanted []peers.Kind) []peers.Kind {
	var out []peers.Kind
	for _, k := range wanted {
		for _, s := range scens {
			if contains(s.Peers, k) && !contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

func contains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

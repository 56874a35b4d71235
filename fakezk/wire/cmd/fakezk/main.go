// Command fakezk serves an in-memory ZooKeeper 3.8 (fakezk, through
// fakezk/wire) on a TCP port, from a zoo.cfg as ZooKeeper reads it: the
// server other projects' test suites start in place of ZooKeeper. It
// starts in milliseconds, needs no JVM, and keeps its tree in dataDir
// across restarts and crashes.
//
//	go build -o bin/fakezk ./fakezk/wire/cmd/fakezk   # or: make fakezk
//	bin/fakezk conf/zoo.cfg                           # as zkServer.sh start-foreground
//	bin/fakezk -port 2181 -data /tmp/zk               # no zoo.cfg
//	bin/zkServer.sh start-foreground conf/zoo.cfg     # the stand-in launcher
//
// What it guarantees:
//
//   - It logs "binding to port <addr>" (ZooKeeper's own line) once the
//     port accepts connections, and exits 0 after closing its listener on
//     SIGTERM or SIGINT. A configuration it cannot honour stops it at
//     start with exit status 2 and a message naming the key.
//   - With a dataDir, every write a client is told of (and every zxid a
//     reply carries) is in a write-ahead log, fsync'd, before the reply is
//     sent: after a SIGKILL and a restart on the same dataDir the tree
//     (data, ACLs, every Stat field, the sequence counters) and the zxid
//     are as the clients last saw them. Sessions are not kept: their
//     ephemerals are deleted at the restart, as if every session expired
//     while the server was down. A torn last log record is dropped; other
//     damage stops the start with an error naming the file (exit 2).
//   - It runs on the real clock: sessions expire, containers and TTL nodes
//     are reaped in real time.
//
// zoo.cfg keys: clientPort, clientPortAddress, tickTime, dataDir,
// dataLogDir, minSessionTimeout, maxSessionTimeout; server.N lines are
// logged and the server runs standalone; keys of an ensemble or of
// ZooKeeper's housekeeping are logged as ignored; every other key is the
// system property "zookeeper."+key, as QuorumPeerConfig makes it.
// Properties read (also as -prop name=value, which bin/zkServer.sh makes
// of the -D options in SERVER_JVMFLAGS and JVMFLAGS):
// zookeeper.extendedTypesEnabled, zookeeper.DigestAuthenticationProvider.superDigest,
// jute.maxbuffer, znode.container.checkIntervalMs,
// znode.container.maxPerMinute, znode.container.maxNeverUsedIntervalMs;
// others are logged as ignored. secureClientPort (TLS) is refused.
//
// The launcher, go-zookeeper's test harness (ZOOKEEPER_BIN_PATH) and how
// its suite fares: fakezk/wire/cmd/fakezk/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/wire"
	"github.com/zkflow/zkflow/task"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// props collects repeated -prop name=value flags.
type props []string

func (p *props) String() string     { return strings.Join(*p, ",") }
func (p *props) Set(v string) error { *p = append(*p, v); return nil }

// logger writes lines in log4j's default ZooKeeper layout, so that what
// greps a ZooKeeper log finds the same words.
type logger struct{ w io.Writer }

func (l logger) log(level, format string, args ...any) {
	ts := task.RealClock().Now().Format("2006-01-02 15:04:05,000")
	fmt.Fprintf(l.w, "%s [myid:] - %-5s [main:fakezk] - %s\n", ts, level, fmt.Sprintf(format, args...))
}

// run is the command: it returns the exit status once ctx is done (0) or
// the start failed (2) or a write to dataDir failed (1).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	out := logger{stdout}
	fs := flag.NewFlagSet("fakezk", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.Int("port", 2181, "clientPort: the port to serve (0: one the system chooses)")
	addr := fs.String("addr", "", "clientPortAddress: the address to listen on (default every address)")
	tick := fs.Duration("tick", 2*time.Second, "tickTime")
	data := fs.String("data", "", "dataDir: where the tree is kept (none: in memory only)")
	var properties props
	fs.Var(&properties, "prop", "a system property `name=value` (as -Dname=value of the JVM; repeatable)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: fakezk [flags] [zoo.cfg]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(err error) int {
		out.log("ERROR", "%v", err)
		fmt.Fprintf(stderr, "fakezk: %v\n", err)
		return 2
	}
	s := defaults()
	if fs.NArg() > 1 {
		return fail(fmt.Errorf("one zoo.cfg at most, got %q", fs.Args()))
	}
	if fs.NArg() == 1 {
		if err := loadConfig(fs.Arg(0), &s); err != nil {
			return fail(err)
		}
	}
	// Flags set on the command line win over zoo.cfg.
	var err error
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "port":
			s.port = *port
		case "addr":
			err = s.setAddress(*addr)
		case "tick":
			s.tick = *tick
		case "data":
			s.dataDir = *data
		}
	})
	if err != nil {
		return fail(err)
	}
	for _, p := range properties {
		name, value, _ := strings.Cut(strings.TrimPrefix(p, "-D"), "=")
		if err := s.setProperty(name, value); err != nil {
			return fail(err)
		}
	}
	if s.tick <= 0 {
		return fail(fmt.Errorf("tickTime %s: must be positive", s.tick))
	}
	if err := s.check(); err != nil {
		return fail(err)
	}
	for _, n := range s.notes {
		out.log("WARN", "%s", n)
	}
	return serve(ctx, s, out, stderr)
}

func serve(ctx context.Context, s settings, out logger, stderr io.Writer) int {
	cfg := fakezk.Config{
		Clock:                  task.RealClock(),
		TickTime:               s.tick,
		MinSessionTimeout:      s.minSession,
		MaxSessionTimeout:      s.maxSession,
		ExtendedTypes:          s.extendedTypes,
		SuperDigest:            s.superDigest,
		ContainerCheckInterval: s.containerCheck,
		ContainerMaxPerMinute:  s.containerMaxPerMinute,
		ContainerMaxNeverUsed:  s.containerMaxNeverUsed,
		Async:                  true,
	}
	wcfg := wire.Config{}
	if s.juteMaxBuffer > 0 {
		cfg.MaxDataSize, cfg.MaxPacketSize, wcfg.MaxFrame = s.juteMaxBuffer, s.juteMaxBuffer, s.juteMaxBuffer
	}
	if err := cfg.Validate(); err != nil {
		out.log("ERROR", "%v", err)
		return 2
	}
	zk, st, err := openTree(cfg, s, out, stderr)
	if err != nil {
		out.log("ERROR", "%v", err)
		fmt.Fprintf(stderr, "fakezk: %v\n", err)
		return 2
	}
	defer zk.Close()
	if st != nil {
		defer st.close()
	}
	hostPort := net.JoinHostPort(s.host, strconv.Itoa(s.port))
	l, err := net.Listen("tcp", hostPort)
	if err != nil {
		out.log("ERROR", "%v", err)
		fmt.Fprintf(stderr, "fakezk: %v\n", err)
		return 2
	}
	srv := wire.New(zk, wcfg)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	out.log("INFO", "binding to port %s", bindingName(l.Addr().(*net.TCPAddr)))
	out.log("INFO", "fakezk serving: tickTime=%d minSessionTimeout=%d maxSessionTimeout=%d extendedTypes=%v zxid=0x%x",
		s.tick.Milliseconds(), zk.NegotiateTimeout(0).Milliseconds(), zk.NegotiateTimeout(time.Duration(1<<62)).Milliseconds(), s.extendedTypes, zk.Zxid())
	select {
	case <-ctx.Done():
		out.log("INFO", "shutting down")
		srv.Close()
		<-served
		return 0
	case err := <-served:
		if errors.Is(err, wire.ErrServerClosed) {
			return 0
		}
		out.log("ERROR", "serving: %v", err)
		return 1
	}
}

// openTree returns the server: a new one without a dataDir; with one,
// restored from it and journaling into it (st).
func openTree(cfg fakezk.Config, s settings, out logger, stderr io.Writer) (zk *fakezk.Server, st *store, err error) {
	if s.dataDir == "" {
		out.log("WARN", "no dataDir: the tree is kept in memory only")
		return fakezk.New(cfg), nil, nil
	}
	st, rec, err := openStore(s.dataDir, s.logDir)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	st.logf = func(f string, a ...any) { out.log("INFO", f, a...) }
	st.fail = func(err error) {
		// Under the server's lock, before the reply: no client hears of
		// a write that is not on disk. The process stops.
		out.log("ERROR", "%v: stopping", err)
		fmt.Fprintf(stderr, "fakezk: %v\n", err)
		os.Exit(1)
	}
	if rec.fresh {
		fresh := fakezk.New(fakezk.Config{})
		rec.zxid, rec.nodes = fresh.Snapshot()
		fresh.Close()
		out.log("INFO", "dataDir %s: new", s.dataDir)
	} else {
		if rec.tornAt >= 0 {
			out.log("WARN", "log %s: a torn last record dropped (truncated at offset %d)", st.logPath(), rec.tornAt)
		}
		out.log("INFO", "dataDir %s: snapshot and %d log records, zxid 0x%x, %d nodes", s.dataDir, rec.replayed, rec.zxid, len(rec.nodes))
	}
	// The recovered tree becomes the snapshot (the ephemerals of the
	// sessions of before are deleted through the journal, after it).
	if err := st.seed(rec.zxid, rec.nodes); err != nil {
		return nil, nil, err
	}
	cfg.Journal = st.journal
	zk, err = fakezk.Restore(cfg, rec.zxid, rec.nodes)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", errCorrupt, s.dataDir, err)
	}
	return zk, st, nil
}

// bindingName is how ZooKeeper's NIOServerCnxnFactory logs its address
// (InetSocketAddress.toString: "0.0.0.0/0.0.0.0:2181").
func bindingName(a *net.TCPAddr) string {
	ip := a.IP.String()
	if a.IP.IsUnspecified() {
		ip = "0.0.0.0"
	}
	return fmt.Sprintf("%s/%s:%d", ip, ip, a.Port)
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/wire"
	"github.com/zkflow/zkflow/internal/peers"
	"github.com/zkflow/zkflow/task"
)

// The -wire comparison: a go-zookeeper client (the gozk peer's get and set
// scenarios: one session, 1 or 16 goroutines) against fakezk served on
// the wire (fakezk/wire, in this process) and against the real server (a
// JVM of its own), runs alternating real, fake, real, fake ... so that a
// change of the machine's load falls on both.

// wireServers are the two servers, in the order each pair runs them.
var wireServers = []string{"real", "fakezk"}

// wireCases are the (operation, goroutines) cases, in the order each pair
// runs them: sets first, so the gets read the 16 bytes a set wrote.
var wireCases = []struct {
	Op         string
	Goroutines int
}{{"set", 1}, {"set", 16}, {"get", 1}, {"get", 16}}

// wireSample is one run.
type wireSample struct {
	Server     string
	Op         string
	Goroutines int
	Pair       int
	Result     peers.Result
	// ServerCPU is the server's CPU time (µs, user and system) over the
	// whole run, warm-up included: the JVM's from /proc, the fake's from
	// this process's rusage (which also counts the harness's own idle
	// goroutines). -1 when unknown (-zk: an existing server).
	ServerCPU float64
	Err       string `json:",omitempty"`
}

type wireReport struct {
	Command          string
	Date             time.Time
	Server           string
	Pairs            int
	Warmup, Duration time.Duration
	Machine          machine
	Client           string
	Samples          []wireSample
	ServerWarmup     time.Duration
}

// runWire runs the -wire comparison and reports it like the main run:
// results.json and results.md in cfg.Out, the README's section (cfg.Section,
// "wire" by default), the table on stdout.
func runWire(ctx context.Context, cfg config, args []string, stdout, stderr io.Writer) error {
	prog, err := peers.Build(peers.GoZK, cfg.Cache)
	if err != nil {
		return err
	}
	realAddr, settings, cpu := cfg.ZK, "existing server at "+cfg.ZK+" (its settings are its own)", func() float64 { return math.NaN() }
	if realAddr == "" {
		s := serverSettings{Defaults: cfg.ServerDefaults}
		fmt.Fprintf(stderr, "starting ZooKeeper: %s\n", s.Describe())
		srv, err := startServer(ctx, s)
		if err != nil {
			return err
		}
		defer srv.Close()
		realAddr, settings, cpu = srv.Addr, s.Describe(), func() float64 { return procCPU(srv.cmd.Process.Pid) }
	}
	fake, err := startWireFake()
	if err != nil {
		return err
	}
	defer fake.Close()
	addrs := map[string]string{"real": realAddr, "fakezk": fake.Addr}
	serverCPU := map[string]func() float64{"real": cpu, "fakezk": selfCPU}

	rep := &wireReport{Command: "go run ./bench " + strings.Join(args[1:], " "), Date: time.Now(),
		Server: settings + "; fakezk: fakezk.Server on the wall clock, tickTime 2s, served by fakezk/wire in the harness's process",
		Pairs:  cfg.Pairs, Warmup: cfg.Warmup, Duration: cfg.Duration, Machine: describeMachine(ctx, realAddr),
		Client: "go-zookeeper " + moduleVersion("github.com/go-zookeeper/zk")}
	path := fmt.Sprintf("/zkbench-wire-%08x", rand.Uint32())
	run := func(server, op string, goroutines int, warmup, duration time.Duration) wireSample {
		p := peers.Params{Server: addrs[server], Scenario: op, Clients: 1, Outstanding: goroutines,
			Warmup: warmup, Duration: duration, Path: path, SessionTimeout: 10 * time.Second}
		rctx, cancel := context.WithTimeout(ctx, 2*(warmup+duration)+runSlack)
		defer cancel()
		before := serverCPU[server]()
		r, err := prog.Run(rctx, p, nil)
		s := wireSample{Server: server, Op: op, Goroutines: goroutines, Result: r, ServerCPU: serverCPU[server]() - before}
		if math.IsNaN(s.ServerCPU) {
			s.ServerCPU = -1
		}
		if err != nil {
			s.Err = err.Error()
		}
		return s
	}
	if cfg.ServerWarmup > 0 {
		fmt.Fprintf(stderr, "warming both servers up for %v each\n", cfg.ServerWarmup)
		for _, server := range wireServers {
			for _, op := range []string{"set", "get"} {
				if s := run(server, op, 16, 0, cfg.ServerWarmup/2); s.Err != "" {
					return fmt.Errorf("warming %s up: %s", server, s.Err)
				}
			}
		}
		rep.ServerWarmup = cfg.ServerWarmup
	}
	n, total := 0, cfg.Pairs*len(wireCases)*len(wireServers)
	for pair := range cfg.Pairs {
		for _, c := range wireCases {
			for _, server := range wireServers {
				n++
				s := run(server, c.Op, c.Goroutines, cfg.Warmup, cfg.Duration)
				s.Pair = pair
				fmt.Fprintf(stderr, "[%d/%d] pair %d %s %d goroutines on %s: %.0f ops/s %s\n", n, total, pair+1, c.Op, c.Goroutines, server, s.Result.Throughput(), s.Err)
				rep.Samples = append(rep.Samples, s)
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
	}
	rep.Machine.LoadAfter = loadavg()
	if err := rep.write(cfg.Out, cfg.Readme, cfg.Section); err != nil {
		return err
	}
	fmt.Fprint(stdout, rep.markdown())
	return nil
}

// wireFake is a fakezk.Server served on a loopback port.
type wireFake struct {
	Addr   string
	zk     *fakezk.Server
	srv    *wire.Server
	served chan struct{}
}

func startWireFake() (*wireFake, error) {
	zk := fakezk.New(fakezk.Config{Clock: task.RealClock()})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		zk.Close()
		return nil, err
	}
	f := &wireFake{Addr: l.Addr().String(), zk: zk, srv: wire.New(zk, wire.Config{}), served: make(chan struct{})}
	go func() {
		defer close(f.served)
		f.srv.Serve(l)
	}()
	return f, nil
}

func (f *wireFake) Close() {
	f.srv.Close()
	<-f.served
	f.zk.Close()
}

// selfCPU is this process's CPU time, µs.
func selfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return math.NaN()
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e3
}

// procCPU is process pid's CPU time (utime + stime of /proc/pid/stat,
// every thread), µs; NaN if unreadable.
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return math.NaN()
	}
	// The fields after the command (which may hold spaces) start after
	// its closing parenthesis; utime and stime are fields 14 and 15.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return math.NaN()
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return math.NaN()
	}
	return (ut + st) * 1e6 / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux
// architecture Go runs on.
const clockTicks = 100

// series returns, per pair, f of the sample of server, op and goroutines
// (NaN where it failed).
func (r *wireReport) series(server, op string, goroutines int, f func(wireSample) float64) []float64 {
	out := make([]float64, r.Pairs)
	for i := range out {
		out[i] = math.NaN()
	}
	for _, s := range r.Samples {
		if s.Server == server && s.Op == op && s.Goroutines == goroutines && s.Err == "" && s.Pair < r.Pairs {
			out[s.Pair] = f(s)
		}
	}
	return out
}

func wireThroughput(s wireSample) float64 { return s.Result.Throughput() }

func wireServerCPUPerOp(s wireSample) float64 {
	if s.Result.Total <= 0 || s.ServerCPU < 0 {
		return math.NaN()
	}
	return s.ServerCPU / float64(s.Result.Total)
}

func wireClientCPUPerOp(s wireSample) float64 {
	if c := s.Result.CPUPerOp(); c > 0 {
		return float64(c) / float64(time.Microsecond)
	}
	return math.NaN()
}

// markdown is the report's table and how it was measured.
func (r *wireReport) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s with `%s`: %d pairs, each run %v of warm-up then %v measured",
		r.Date.UTC().Format("2006-01-02 15:04 MST"), r.Command, r.Pairs, r.Warmup, r.Duration)
	if r.ServerWarmup > 0 {
		fmt.Fprintf(&b, " (each server first loaded for %v, discarded)", r.ServerWarmup)
	}
	fmt.Fprintf(&b, ". Real server: %s. Client: %s, one session, in the gozk peer program (a process of its own). Machine: %s, %s cores; load average %s before, %s after.\n\n",
		r.Server, r.Client, r.Machine.CPU, r.Machine.Cores, r.Machine.LoadBefore, r.Machine.LoadAfter)
	b.WriteString("| op | goroutines | real ops/s | fakezk ops/s | fakezk/real (median; min–max over pairs) | server CPU µs/op real | fakezk | client CPU µs/op real | fakezk |\n")
	b.WriteString("|---|---:|---:|---:|---|---:|---:|---:|---:|\n")
	for _, c := range wireCases {
		rt := r.series("real", c.Op, c.Goroutines, wireThroughput)
		ft := r.series("fakezk", c.Op, c.Goroutines, wireThroughput)
		ratio := spreadOf(ratios(ft, rt))
		med := func(server string, f func(wireSample) float64) string {
			return fix2(spreadOf(r.series(server, c.Op, c.Goroutines, f)).Median)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s (%s–%s) | %s | %s | %s | %s |\n", c.Op, c.Goroutines,
			fig(spreadOf(rt).Median), fig(spreadOf(ft).Median), fix2(ratio.Median), fix2(ratio.Min), fix2(ratio.Max),
			med("real", wireServerCPUPerOp), med("fakezk", wireServerCPUPerOp),
			med("real", wireClientCPUPerOp), med("fakezk", wireClientCPUPerOp))
	}
	var failed []string
	for _, s := range r.Samples {
		if s.Err != "" {
			failed = append(failed, fmt.Sprintf("pair %d %s %d on %s: %s", s.Pair+1, s.Op, s.Goroutines, s.Server, firstLineOfText(s.Err)))
		}
	}
	if len(failed) > 0 {
		b.WriteString("\nFailed runs (left out above):\n\n- " + strings.Join(failed, "\n- ") + "\n")
	}
	return b.String()
}

// moduleVersion is the version of module path this binary was built with.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				return m.Version
			}
		}
	}
	return "(version unknown)"
}

func firstLineOfText(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// write writes results.json and results.md into dir and, when readme is
// set, replaces its section.
func (r *wireReport) write(dir, readme, section string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	md := r.markdown()
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(md), 0o644); err != nil {
		return err
	}
	if readme == "" {
		return nil
	}
	return replaceSection(readme, section, md)
}

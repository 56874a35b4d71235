package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/zkflow/zkflow/internal/peers"
)

// ours is the Impl of the library's results.
const ours = "ours"

// sample is one run of one implementation in one pair.
type sample struct {
	Scenario string `json:"scenario"`
	Clients  int    `json:"clients"`
	Impl     string `json:"impl"`
	// Net is the network the run went over (loopback or emulated).
	Net    string       `json:"network"`
	Pair   int          `json:"pair"`
	Result peers.Result `json:"result"`
	// RoundTrips is requests per operation counted at the library's Conn
	// (ours only; 0 otherwise).
	RoundTrips float64 `json:"round_trips,omitempty"`
	// ServerPackets is the server's packets received during the run per
	// operation (mntr zk_packets_received; it includes connecting and
	// session pings), for every implementation.
	ServerPackets float64 `json:"server_packets,omitempty"`
	Err           string  `json:"error,omitempty"`
}

// plan is what a harness run does.
type plan struct {
	Addr           string
	Scenarios      []*scenario
	Pairs          int
	Warmup         time.Duration
	Duration       time.Duration
	SessionTimeout time.Duration
	// Programs are the peers that could be built; the others are left out
	// (the report says why: Skipped).
	Programs map[peers.Kind]*peers.Program
	Skipped  map[peers.Kind]string
	// Root is the node under which every run gets a path of its own.
	Root string
	// Nets are the networks each run is made over, in turn (none for a
	// plan of simulations only).
	Nets []network
}

// nets are the networks scenario s runs over: a simulation needs none
// and runs once.
func (p *plan) nets(s *scenario) []network {
	if s.Sim || len(p.Nets) == 0 {
		return []network{{Name: loopback}}
	}
	return p.Nets
}

// runs counts the runs of p, for the progress display.
func (p *plan) runs() int {
	n := 0
	for _, s := range p.Scenarios {
		per := 1
		for _, k := range s.Peers {
			if p.Programs[k] != nil {
				per++
			}
		}
		n += per * len(s.Clients) * p.Pairs * len(p.nets(s))
	}
	return n
}

// execute runs the plan: for each scenario and client count, Pairs rounds
// of one run of the library and one of each peer over each network, so
// each pair's ratio compares runs made close together in time. The order rotates from pair
// to pair (A B C D, B C D A, C D A B, ...), so that a drift of the server
// or the machine (JIT, garbage, other load) does not always fall on the
// same implementation. A run that fails is recorded with its error and
// the harness goes on.
func execute(ctx context.Context, p *plan, prog *progress) []sample {
	var out []sample
	for _, s := range p.Scenarios {
		impls := []*peers.Program{nil} // nil: ours
		for _, k := range s.Peers {
			if peer := p.Programs[k]; peer != nil {
				impls = append(impls, peer)
			}
		}
		for _, n := range s.Clients {
			for pair := range p.Pairs {
				for _, net := range p.nets(s) {
					for _, i := range rotation(len(impls), pair) {
						if peer := impls[i]; peer == nil {
							out = append(out, runOurs(ctx, p, prog, s, net, n, pair))
						} else {
							out = append(out, runPeer(ctx, p, prog, peer, s, net, n, pair))
						}
					}
				}
				if ctx.Err() != nil {
					return out
				}
			}
		}
	}
	return out
}

// rotation is the order of n implementations in pair number pair: the
// first one of the list, then the next, ... starting pair places on.
func rotation(n, pair int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = (pair + i) % n
	}
	return out
}

// warmServer loads the server for d before the first run: the lock and
// CAS scenarios of the library, 4 clients each, one after the other, on
// paths of their own; the results are discarded. A fresh JVM runs
// ZooKeeper's request path interpreted at first, so without it the first
// runs of a harness run would be measured against a slower server.
func warmServer(ctx context.Context, p *plan, d time.Duration) error {
	for i, run := range []func(context.Context, runSpec) (measured, error){lockRun, idRun(1)} {
		r := runSpec{Addr: p.Addr, Clients: 4, Path: fmt.Sprintf("%s/warmup-%d", p.Root, i), Duration: d / 2,
			SessionTimeout: p.SessionTimeout, Outstanding: 64}
		if _, err := run(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

func (p *plan) path(s *scenario, net network, n, pair int, impl string) string {
	return fmt.Sprintf("%s/%s-%s-%d-%s-%d", p.Root, s.Name, net.Name, n, impl, pair)
}

// runOurs runs the library's side in this process. Its CPU per operation
// is this process's CPU time over the measuring window (getrusage
// RUSAGE_SELF, read by peers.Drive at the end of the warm-up and at the
// end), as a peer's is its own process's: every goroutine of the clients,
// their executors and connections, the runtime's garbage collector
// included. Nothing else of weight runs in this process during a run
// (the emulated network's proxy is a process of its own); a collection
// first keeps an earlier run's garbage out of the window.
func runOurs(ctx context.Context, p *plan, pr *progress, s *scenario, net network, n, pair int) sample {
	sm := sample{Scenario: s.Name, Clients: n, Impl: ours, Net: net.Name, Pair: pair}
	pr.begin(fmt.Sprintf("%s clients=%d %s pair %d: %s", s.Name, n, net.Label(), pair+1, ours), p.Warmup+p.Duration)
	r := runSpec{Addr: net.Addr, Clients: n, Path: p.path(s, net, n, pair, ours), Warmup: p.Warmup, Duration: p.Duration,
		SessionTimeout: p.SessionTimeout, Outstanding: 64, Done: pr.setOps}
	runtime.GC()
	before := packets(ctx, p.Addr, s)
	rctx, cancel := p.runContext(ctx)
	m, err := s.Run(rctx, r)
	err = p.overdue(rctx, err)
	cancel()
	if err != nil {
		sm.Err = err.Error()
		pr.end("FAILED: " + sm.Err)
		return sm
	}
	m.Impl, m.Scenario, m.Clients = ours, s.Name, n
	sm.Result, sm.RoundTrips = m.Result, m.RoundTrips()
	sm.ServerPackets = perOp(packets(ctx, p.Addr, s)-before, m.Total)
	pr.end(summary(sm))
	return sm
}

// runPeer runs a peer program over net. Its CPU per operation is the
// CPU its process used over its measuring window, which it reads from
// its own counters and prints (peers.Result.CPU); the rusage of the whole
// process, start-up and warm-up included, is kept beside it
// (Result.ProcessCPU) as an upper bound.
func runPeer(ctx context.Context, p *plan, pr *progress, prog *peers.Program, s *scenario, net network, n, pair int) sample {
	k := prog.Kind
	sm := sample{Scenario: s.Name, Clients: n, Impl: string(k), Net: net.Name, Pair: pair}
	pr.begin(fmt.Sprintf("%s clients=%d %s pair %d: %s", s.Name, n, net.Label(), pair+1, k), p.Warmup+p.Duration)
	params := peers.Params{Server: net.Addr, Scenario: s.Name, Clients: n, Duration: p.Duration, Warmup: p.Warmup,
		Path: p.path(s, net, n, pair, string(k)), Outstanding: 64, SessionTimeout: p.SessionTimeout}
	before := packets(ctx, p.Addr, s)
	rctx, cancel := p.runContext(ctx)
	res, err := prog.Run(rctx, params, nil)
	err = p.overdue(rctx, err)
	cancel()
	if err != nil {
		sm.Err = err.Error()
		pr.end("FAILED: " + sm.Err)
		return sm
	}
	sm.Result = res
	sm.ServerPackets = perOp(packets(ctx, p.Addr, s)-before, res.Total)
	pr.end(summary(sm))
	return sm
}

func (s sample) isSim() bool {
	sc := lookup(s.Scenario)
	return sc != nil && sc.Sim
}

func summary(s sample) string {
	r := s.Result
	out := fmt.Sprintf("%s/s, p50 %v, p99 %v", human(r.Throughput()), r.Quantile(50), r.Quantile(99))
	if cpu := r.CPUPerOp(); cpu > 0 {
		out += fmt.Sprintf(", CPU %.1f µs/op", float64(cpu)/float64(time.Microsecond))
	}
	if s.RoundTrips > 0 {
		out += fmt.Sprintf(", %.2f round trips/op", s.RoundTrips)
	}
	if r.Errors > 0 {
		out += fmt.Sprintf(", %d errors", r.Errors)
	}
	return out
}

// packets is the server's count of packets received (NaN when unknown or
// for a simulation).
func packets(ctx context.Context, addr string, s *scenario) float64 {
	if s.Sim {
		return math.NaN()
	}
	n, err := mntrValue(ctx, addr, "zk_packets_received")
	if err != nil {
		return math.NaN()
	}
	return float64(n)
}

func perOp(n float64, ops int64) float64 {
	if math.IsNaN(n) || ops <= 0 {
		return 0
	}
	return n / float64(ops)
}

// runSlack is how much longer than its warm-up and measuring time a run
// may take (connecting, a JVM's start, the last operations) before it is
// stopped and recorded as failed: an implementation that hangs (a peer's
// recipe deadlocked) fails its run instead of stopping the harness.
var runSlack = time.Minute

func (p *plan) runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, 2*(p.Warmup+p.Duration)+runSlack, errOverdue)
}

// errOverdue: a run took longer than its deadline.
var errOverdue = errors.New("run stopped: it went on past its deadline (hung?)")

// overdue replaces err with the run's deadline when that is what ended it.
func (p *plan) overdue(rctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(rctx), errOverdue) {
		return fmt.Errorf("%w (%v): %v", errOverdue, 2*(p.Warmup+p.Duration)+runSlack, err)
	}
	return err
}

package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/internal/peers"
)

// A lock scenario at 64 clients over two networks, two pairs, with the
// CPU each client process reported: ours, Curator and raw go-zookeeper.
func netsReport() *report {
	lock := &scenario{Name: "lock", Title: "lock", Unit: "handoffs/s", Clients: []int{64},
		Peers: []peers.Kind{peers.Curator, peers.GoZK}, Targets: []target{{Peer: peers.Curator, Min: 1.5}}}
	r := &report{Pairs: 2, scenarios: []*scenario{lock}, Machine: machine{LoadBefore: "0.1 0 0", Cores: "2"},
		Nets: []network{{Name: loopback}, {Name: emulated, Delay: 500 * time.Microsecond}}}
	add := func(net, impl string, cpuPerOp time.Duration, ops ...int64) {
		for pair, o := range ops {
			x := res(o)
			x.CPU = time.Duration(o) * cpuPerOp
			r.Samples = append(r.Samples, sample{Scenario: "lock", Clients: 64, Impl: impl, Net: net, Pair: pair, Result: x, RoundTrips: 5})
		}
	}
	add(loopback, ours, 20*time.Microsecond, 400, 600)
	add(loopback, "gozk", 40*time.Microsecond, 200, 300)    // ours ÷ gozk 2, 2; CPU 0.5
	add(loopback, "curator", 90*time.Microsecond, 100, 300) // ours ÷ curator 4, 2: median 3
	add(emulated, ours, 30*time.Microsecond, 100, 100)
	add(emulated, "gozk", 60*time.Microsecond, 50, 100) // 2, 1: median 1.5; CPU 0.5
	add(emulated, "curator", 0, 25, 25)                 // 4; Curator's CPU not reported
	return r
}

func TestReportNetworksSideBySide(t *testing.T) {
	md := netsReport().markdown("results")
	for _, want := range []string{
		"| networks | loopback: the clients dial the server; emulated (0.5 ms): every client",
		"| scenario | clients | impl | loopback | ÷ gozk | ÷ curator | CPU/op | CPU ÷ gozk | 0.5 ms | ÷ gozk | ÷ curator | CPU/op | CPU ÷ gozk | 0.5 ms ÷ loopback |",
		"| lock | 64 | ours | 500 | 2.00 | 3.00 | 20 µs | 0.50 | 100 | 1.50 | 4.00 | 30 µs | 0.50 | 0.21 |", // 1/4, 1/6
		"| lock | 64 | gozk | 250 | 1.00 | 1.50 | 40 µs | 1.00 | 75 | 1.00 | 3.00 | 60 µs | 1.00 | 0.29 |",  // 1/4, 1/3
		"| lock | 64 | curator | 200 | 0.75 | 1.00 | 90 µs | 2.25 | 25 | 0.38 | 1.00 | - | - | 0.17 |",      // 1/4, 1/12
		"| lock | 64 | 0.5 ms | ours | 100 handoffs/s | 4.00 ms | 7.00 ms | 30 µs | 5.00 | - | 0 | 2/2 |",
		"| lock | 64 | loopback | curator | 2.00 | 3.00 | 4.00 | 2 |",
		"| lock | 64 | 0.5 ms | curator | 4.00 | 4.00 | 4.00 | 2 |",
		"| lock | >= 1.5x curator | 0.5 ms | 64 | 4.00 (4.00-4.00) | yes |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// The plots carry one series per implementation and network.
func TestReportNetworksPlots(t *testing.T) {
	plots := netsReport().plots()
	tp := plots["throughput-lock.svg"]
	var names []string
	for _, s := range tp.Series {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "ours, loopback,curator, loopback,gozk, loopback,ours, 0.5 ms,curator, 0.5 ms,gozk, 0.5 ms" {
		t.Fatalf("throughput series %s", got)
	}
	if y := tp.Series[3].Y[0]; math.Abs(y-100) > 1e-9 {
		t.Fatalf("ours over 0.5 ms: %v, want 100", y)
	}
	if n := len(plots["latency-lock-64.svg"].Series); n != 6 {
		t.Fatalf("latency series: %d, want 6", n)
	}
}

// The network of each run and the CPU each client reported survive the
// JSON, and a sample without a network (results.json from before the
// emulated network) counts as loopback.
func TestReportNetworksJSON(t *testing.T) {
	r := netsReport()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Nets) != 2 || back.Nets[1].Delay != 500*time.Microsecond || back.Samples[6].Net != emulated ||
		back.Samples[0].Result.CPU != 400*20*time.Microsecond {
		t.Fatalf("after JSON: nets %+v, sample %+v", back.Nets, back.Samples[6])
	}
	old := netsReport()
	for i := range old.Samples {
		if old.Samples[i].Net == loopback {
			old.Samples[i].Net = ""
		}
	}
	if a, b := old.ratio(old.scenarios[0], 64, "curator", "", loopback), r.ratio(r.scenarios[0], 64, "curator", "", loopback); a.Median != b.Median || a.N != 2 {
		t.Fatalf("a sample without a network: %+v, want %+v", a, b)
	}
}

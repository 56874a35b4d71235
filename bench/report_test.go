package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/internal/peers"
)

func res(ops int64) peers.Result {
	lat := make([]time.Duration, len(peers.Quantiles))
	for i := range lat {
		lat[i] = time.Duration(i+1) * time.Millisecond
	}
	return peers.Result{Ops: ops, Total: ops, Seconds: 1, Latency: lat}
}

// A report of two scenarios over three pairs: lock (ours against curator,
// target 1.5x) and blocks (ours against curator's cas, target 1000x).
func testReport() *report {
	lock := &scenario{Name: "lock", Title: "lock", Unit: "handoffs/s", Clients: []int{1, 4}, Peers: []peers.Kind{peers.Curator},
		Targets: []target{{Peer: peers.Curator, Min: 1.5}}}
	cas := &scenario{Name: "cas", Title: "cas", Unit: "IDs/s", Clients: []int{1, 4}, Peers: []peers.Kind{peers.Curator}}
	blocks := &scenario{Name: "blocks", Title: "blocks", Unit: "IDs/s", Clients: []int{1, 4}, Baseline: "cas",
		Targets: []target{{Peer: peers.Curator, Min: 1000, From: "cas"}}}
	r := &report{Pairs: 3, scenarios: []*scenario{lock, cas, blocks}, Machine: machine{LoadBefore: "3.5 1 1", Cores: "2"}}
	add := func(scen string, n int, impl string, ops ...int64) {
		for pair, o := range ops {
			if o < 0 {
				r.Samples = append(r.Samples, sample{Scenario: scen, Clients: n, Impl: impl, Pair: pair, Err: "connection refused"})
				continue
			}
			r.Samples = append(r.Samples, sample{Scenario: scen, Clients: n, Impl: impl, Pair: pair, Result: res(o)})
		}
	}
	add("lock", 1, ours, 300, 330, 200)
	add("lock", 1, "curator", 100, 300, 100) // ratios 3, 1.1, 2: median 2
	add("lock", 4, ours, 100, 100, 100)
	add("lock", 4, "curator", 100, -1, 80) // ratios 1, 1.25 (pair 2 failed): median 1.125
	add("cas", 1, "curator", 10, 10, 10)
	add("cas", 4, "curator", 10, 10, 10)
	add("blocks", 1, ours, 20000, 5000, 30000) // 2000x, 500x, 3000x: median 2000
	add("blocks", 4, ours, 9000, 9000, 9000)   // 900x
	return r
}

func TestReportRatios(t *testing.T) {
	r := testReport()
	lock, blocks := r.scenarios[0], r.scenarios[2]
	check := func(got ratio, min, med, max float64, n int) {
		t.Helper()
		if got.N != n || !near(got.Min, min) || !near(got.Median, med) || !near(got.Max, max) {
			t.Errorf("%s clients=%d vs %s: %+v, want %v/%v/%v over %d", got.Scenario, got.Clients, got.Peer, got.spread, min, med, max, n)
		}
	}
	check(r.ratio(lock, 1, "curator", "", loopback), 1.1, 2, 3, 3)
	check(r.ratio(lock, 4, "curator", "", loopback), 1, 1.125, 1.25, 2)
	check(r.ratio(blocks, 1, "curator", "cas", loopback), 500, 2000, 3000, 3)
	check(r.ratio(blocks, 4, "curator", "cas", loopback), 900, 900, 900, 3)
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestReportMarkdown(t *testing.T) {
	md := testReport().markdown("results")
	for _, want := range []string{
		"| lock | >= 1.5x curator | loopback | 1 | 2.00 (1.10-3.00) | yes |",
		"| lock | >= 1.5x curator | loopback | 4 | 1.12 (1.00-1.25) | no |",
		"| blocks | >= 1000x curator cas | loopback | 1 | 2000 (500-3000) | yes |",
		"| blocks | >= 1000x curator cas | loopback | 4 | 900 (900-900) | no |",
		"| lock | 4 | loopback | curator | 90 handoffs/s |", // median of 100 and 80; the failed run is left out
		"| lock | 4 | loopback | curator | 90 handoffs/s | 4.00 ms | 7.00 ms | - | - | - | 0 | 2/3 |",
		"- lock clients=4 loopback curator pair 2: connection refused",
		"**The machine was not quiet**",
		"![lock throughput](results/throughput-lock.svg)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestReportWrite(t *testing.T) {
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	head, tail := "# Bench\n\nhand-written\n\n", "\n## After\n\nalso hand-written\n"
	if err := os.WriteFile(readme, []byte(head+beginMarker("main")+"\nold figures\n"+endMarker("main")+tail), 0o644); err != nil {
		t.Fatal(err)
	}
	r := testReport()
	out := filepath.Join(dir, "results")
	if err := r.write(out, readme, "main"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"results.json", "results.md", "throughput-lock.svg", "latency-lock-4.svg", "throughput-blocks.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	b, _ := os.ReadFile(readme)
	s := string(b)
	if !strings.HasPrefix(s, head+beginMarker("main")) || !strings.HasSuffix(s, endMarker("main")+tail) || strings.Contains(s, "old figures") ||
		!strings.Contains(s, "](results/throughput-lock.svg)") {
		t.Fatalf("README after write:\n%s", s)
	}
	// Without markers nothing is overwritten.
	plain := filepath.Join(dir, "PLAIN.md")
	os.WriteFile(plain, []byte("# nothing to replace\n"), 0o644)
	if err := r.write(out, plain, "main"); !errors.Is(err, errNoMarkers) {
		t.Fatalf("README without markers: %v", err)
	}
}

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{"-pairs", "5", "-clients", "1,8", "-scenarios", "lock"}, os.Stderr)
	if err != nil || c.Pairs != 5 || len(c.Clients) != 2 || c.Clients[1] != 8 {
		t.Fatalf("parseFlags = %+v, %v", c, err)
	}
	if len(c.Networks) != 2 || c.Networks[0] != loopback || c.Networks[1] != emulated || c.Delay != 500*time.Microsecond {
		t.Fatalf("default networks %q, delay %v: want loopback and emulated at 500µs", c.Networks, c.Delay)
	}
	c, err = parseFlags([]string{"-networks", "emulated", "-delay", "0"}, os.Stderr)
	if err != nil || len(c.Networks) != 1 || c.Networks[0] != emulated || c.Delay != 0 {
		t.Fatalf("-networks emulated -delay 0: %q %v %v", c.Networks, c.Delay, err)
	}
	for _, args := range [][]string{
		{"-networks", "wifi"}, {"-networks", ","}, {"-delay", "-1ms"},
		{"-pairs", "0"}, {"-duration", "0s"}, {"-warmup", "-1s"}, {"-clients", "0"}, {"-clients", "a"},
		{"-out", ""}, {"extra"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
	if _, err := selectScenarios("lock,nope"); err == nil {
		t.Error("unknown scenario accepted")
	}
	if _, err := parsePeers("curator,cobol"); err == nil {
		t.Error("unknown peer accepted")
	}
	s, _ := selectScenarios("lock,pipeline")
	s = withClients(s, []int{2})
	if len(s[0].Clients) != 1 || s[0].Clients[0] != 2 || s[1].Clients[0] != 1 || len(lookup("lock").Clients) != 4 || lookup("cas").Clients[3] != 64 {
		t.Fatalf("withClients: lock %v pipeline %v registry %v", s[0].Clients, s[1].Clients, lookup("lock").Clients)
	}
}

// Each implementation leads one pair in turn, and every pair runs each
// implementation once.
func TestRotation(t *testing.T) {
	for pair, want := range [][]int{{0, 1, 2, 3}, {1, 2, 3, 0}, {2, 3, 0, 1}, {3, 0, 1, 2}, {0, 1, 2, 3}} {
		if got := rotation(4, pair); !slices.Equal(got, want) {
			t.Errorf("rotation(4, %d) = %v, want %v", pair, got, want)
		}
	}
	if got := rotation(1, 2); !slices.Equal(got, []int{0}) {
		t.Errorf("rotation(1, 2) = %v", got)
	}
}

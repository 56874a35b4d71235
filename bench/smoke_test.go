package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/internal/peers"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// The harness end to end on a real server, sized to seconds: every
// scenario with one client count, one pair, every peer that is installed,
// over loopback and the emulated network; every run must succeed and
// measure something, its CPU included, and the README's results section
// must be replaced.
func TestSmoke(t *testing.T) {
	zkserver.Require(t)
	cl := zkserver.Standalone(t, zkserver.Options{MaxSessionTimeout: 10 * time.Second, Throughput: true})
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte("# bench\n"+beginMarker("main")+"\n"+endMarker("main")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"bench", "-zk", cl.Addrs()[0], "-pairs", "1", "-duration", "300ms", "-warmup", "0s", "-server-warmup", "400ms",
		"-clients", "2", "-scenarios", "all,recipes,partition", "-out", out, "-readme", readme, "-cache", peers.DefaultCacheDir()}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	ran := map[string]bool{}
	for _, s := range rep.Samples {
		if s.Err != "" || s.Result.Ops == 0 || s.Result.Throughput() <= 0 {
			t.Errorf("%s clients=%d %s %s: ops %d, error %q", s.Scenario, s.Clients, s.Net, s.Impl, s.Result.Ops, s.Err)
		}
		if s.Impl == ours && !s.isSim() && (s.RoundTrips <= 0 || s.ServerPackets <= 0) && s.Scenario != "blocks" &&
			s.Scenario != "discovery" { // lookups in a cache send no request
			t.Errorf("%s: round trips not counted: %v, %v", s.Scenario, s.RoundTrips, s.ServerPackets)
		}
		// Every client's CPU over its measuring window; a peer's within
		// its whole process's.
		if !s.isSim() && s.Result.CPU <= 0 {
			t.Errorf("%s %s %s: no CPU time measured", s.Scenario, s.Net, s.Impl)
		}
		if s.Impl != ours && (s.Result.ProcessCPU <= 0 || s.Result.CPU > s.Result.ProcessCPU) {
			t.Errorf("%s %s %s: CPU %v over the window, %v for the whole process", s.Scenario, s.Net, s.Impl, s.Result.CPU, s.Result.ProcessCPU)
		}
		// trylock: the wins are counted (a peer's holds= parsed) and are
		// some of the tries: with 2 clients, each wins some.
		if s.Scenario == "trylock" && (s.Result.Holds <= 0 || s.Result.Holds > s.Result.Total) {
			t.Errorf("trylock %s %s: %d tries won of %d", s.Net, s.Impl, s.Result.Holds, s.Result.Total)
		}
		ran[s.Scenario+"/"+s.Net+"/"+s.Impl] = true
	}
	for _, s := range registry {
		nets := []string{loopback, emulated}
		if s.Sim {
			nets = nets[:1]
		}
		for _, net := range nets {
			if !ran[s.Name+"/"+net+"/"+ours] {
				t.Errorf("scenario %s did not run over %s", s.Name, net)
			}
			for _, k := range s.Peers {
				if peers.Available(k) == nil && !ran[s.Name+"/"+net+"/"+string(k)] {
					t.Errorf("scenario %s: peer %s is installed but did not run over %s", s.Name, k, net)
				}
			}
		}
	}
	md, _ := os.ReadFile(readme)
	if rep.ServerWarmup != 400*time.Millisecond || !strings.Contains(string(md), "| server warm-up | 400ms ") {
		t.Errorf("server warm-up not recorded: %v", rep.ServerWarmup)
	}
	if !strings.Contains(string(md), "| lock | 2 | loopback | ours |") || !strings.Contains(string(md), "| lock | 2 | 0.5 ms | ours |") ||
		!strings.Contains(string(md), "### Networks side by side") || !strings.Contains(string(md), "](results/throughput-lock.svg)") {
		t.Fatalf("README not regenerated:\n%s", md)
	}
	if !strings.Contains(string(md), "| trylock | 2 | loopback | ours |") || !strings.Contains(string(md), "### Shares") {
		t.Errorf("README has no trylock rows or shares:\n%s", md)
	}
	t.Logf("stderr:\n%s", stderr.String())

	// The check trylock runs once its load ended bites on a node left
	// in the directory.
	cs, err := dialClients(ctx, cl.Addrs()[0], 1, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.close()
	ex := cs.Execs[0]
	if err := ensurePath(ctx, ex, "/left/behind"); err != nil {
		t.Fatal(err)
	}
	if err := leftBehind(ctx, ex, "/left"); !errors.Is(err, errLeftBehind) {
		t.Errorf("leftBehind with a child: %v", err)
	}
	if err := leftBehind(ctx, ex, "/left/behind"); err != nil {
		t.Errorf("leftBehind with none: %v", err)
	}
}

// A simulated seed is deterministic (the same seed, the same count of
// failed rounds) and passes its checks.
func TestSimSeed(t *testing.T) {
	faults := 0
	const seeds = 10
	for seed := uint64(1); seed <= seeds; seed++ {
		a, err := simSeed(seed, 4)
		if err != nil {
			t.Fatal(err)
		}
		b, err := simSeed(seed, 4)
		if err != nil || a != b {
			t.Fatalf("seed %d: %d then %d failed rounds (%v): not deterministic", seed, a, b, err)
		}
		faults += a
	}
	if faults == 0 {
		t.Fatalf("no round failed in %d seeds: the drawn faults never bit", seeds)
	}
}

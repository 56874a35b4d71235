package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/internal/peers"
)

// fakePeer is a peer program made of a shell script (the parameters
// follow it as $1 ...).
func fakePeer(script string) *peers.Program {
	return &peers.Program{Kind: peers.Curator, Argv: []string{"/bin/sh", "-c", script, "sh"}, Scenarios: []string{"trylock"}}
}

// runFake runs the trylock scenario's peer runs only (ours is left out:
// no server) with prog as Curator, and returns the samples and the report.
func runFake(t *testing.T, prog *peers.Program) ([]sample, string) {
	t.Helper()
	s := *lookup("trylock")
	s.Clients = []int{1}
	p := &plan{Addr: "127.0.0.1:1", Scenarios: []*scenario{&s}, Pairs: 1, Warmup: 0, Duration: 50 * time.Millisecond,
		SessionTimeout: time.Second, Root: "/zkbench-test", Nets: []network{{Name: loopback, Addr: "127.0.0.1:1"}}}
	pr := newProgress(io.Discard, 1)
	var out []sample
	for _, net := range p.Nets {
		out = append(out, runPeer(context.Background(), p, pr, prog, &s, net, 1, 0))
	}
	pr.close()
	r := &report{Pairs: 1, scenarios: []*scenario{&s}, Samples: out, Nets: p.Nets, Machine: machine{LoadBefore: "0.1", Cores: "2"}}
	return out, r.markdown("results")
}

// A peer program that fails makes its run fail with the program's words,
// and the report says so (a failed run, no figure), instead of a row.
func TestPeerFailureIsReported(t *testing.T) {
	out, md := runFake(t, fakePeer("echo 'curator: no session' >&2; exit 1"))
	if len(out) != 1 || !strings.Contains(out[0].Err, "curator: no session") {
		t.Fatalf("samples %+v: want one failed run quoting the program", out)
	}
	for _, want := range []string{
		"| trylock | 1 | loopback | curator | - tries/s |",
		"- trylock clients=1 loopback curator pair 1: peers: program failed",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| trylock | 1 | loopback | curator | 0.0%") {
		t.Errorf("a failed run has a share:\n%s", md)
	}
}

// A peer that prints no result line fails its run too.
func TestPeerWithoutResultIsReported(t *testing.T) {
	out, _ := runFake(t, fakePeer("echo hello"))
	if len(out) != 1 || !strings.Contains(out[0].Err, "printed no ZKBENCH line") {
		t.Fatalf("samples %+v: want a failed run", out)
	}
}

// A peer that hangs is stopped at the run's deadline and its run fails,
// saying so; the harness goes on.
func TestPeerHangIsStopped(t *testing.T) {
	defer func(d time.Duration) { runSlack = d }(runSlack)
	runSlack = 300 * time.Millisecond
	start := time.Now()
	out, _ := runFake(t, fakePeer("exec sleep 30"))
	if len(out) != 1 || !strings.Contains(out[0].Err, errOverdue.Error()) {
		t.Fatalf("samples %+v: want a run stopped at its deadline", out)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the hung peer was stopped after %v", d)
	}
}

// A peer's trylock line is parsed with its wins (holds=), and the report
// gives the share of tries won.
func TestTryLockShare(t *testing.T) {
	out, md := runFake(t, fakePeer("echo 'ZKBENCH impl=curator scenario=trylock clients=1 ops=80 errors=0 secs=0.05 total=100 holds=25 min=1 p10=1 p25=1 p50=2 p75=2 p90=3 p99=4 p999=4 max=4'"))
	if len(out) != 1 || out[0].Err != "" || out[0].Result.Holds != 25 || out[0].Result.Total != 100 {
		t.Fatalf("samples %+v", out)
	}
	if want := "| trylock | 1 | loopback | curator | 25.0% | tries won |"; !strings.Contains(md, want) {
		t.Errorf("report lacks %q:\n%s", want, md)
	}
	// No scenario of this report has targets: no empty Targets table.
	if strings.Contains(md, "### Targets") {
		t.Errorf("a Targets section without targets:\n%s", md)
	}
}

// The recipe scenarios' results go to their own README section: writing
// it leaves the main run's section as it was.
func TestRecipesSectionLeavesMain(t *testing.T) {
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	orig := "# bench\n" + beginMarker("main") + "\nMAIN RESULTS\n" + endMarker("main") + "\n" + beginMarker("recipes") + "\nold\n" + endMarker("recipes") + "\n"
	if err := os.WriteFile(readme, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	s := *lookup("queue")
	r := &report{Pairs: 1, scenarios: []*scenario{&s}, Samples: []sample{{Scenario: "queue", Clients: 1, Impl: ours, Result: res(10)}}}
	if err := r.write(filepath.Join(dir, "results-recipes"), readme, "recipes"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(readme)
	md := string(b)
	if !strings.Contains(md, beginMarker("main")+"\nMAIN RESULTS\n"+endMarker("main")) || strings.Contains(md, "\nold\n") ||
		!strings.Contains(md, "| queue | 1 | loopback | ours | 10 items/s |") || !strings.Contains(md, "](results-recipes/throughput-queue.svg)") {
		t.Fatalf("README:\n%s", md)
	}
}

// The recipe scenarios are a group: not in all, all four by its name, and
// their section is the group's unless -section says otherwise.
func TestRecipesGroup(t *testing.T) {
	names := func(list string) string {
		scens, err := selectScenarios(list)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range scens {
			out = append(out, s.Name)
		}
		return strings.Join(out, ",") + " " + group(scens)
	}
	for list, want := range map[string]string{
		"recipes":       "rwlock,semaphore,trylock,queue,election,discovery recipes",
		"trylock,queue": "trylock,queue recipes",
		"lock,trylock":  "lock,trylock ",
		"all,recipes":   "lock,cas,blocks,pipeline,sim,config,masterworker,rwlock,semaphore,trylock,queue,election,discovery ",
	} {
		if got := names(list); got != want {
			t.Errorf("-scenarios %s: %q, want %q", list, got, want)
		}
	}
	if got := names("all"); strings.Contains(got, "queue") || !strings.Contains(got, "lock,cas") {
		t.Errorf("-scenarios all: %q", got)
	}
}

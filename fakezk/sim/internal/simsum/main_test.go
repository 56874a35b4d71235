package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const okRun = `=== RUN   TestSimExplore
    x_test.go:1: SIMRANGE fixed=1-3000 drawn=1000000123-1000003122 source="commit 0000000000ab"
    x_test.go:1: SIM scenario=a seeds=6000 wall_ms=2000 safety=0 liveness=0 setup=0 fired=drop-applied:3,wipe:0
    x_test.go:2: SIM scenario=b seeds=5000 wall_ms=1000 safety=0 liveness=0 setup=0 fired=drop-applied:2,wipe:1 regressions=17,45 ranges=1-3000,1000000123-1000003122 rooted=1250 cpu_ms=2500 synced=1300
    x_test.go:3: determinism: a: 10 pairs compared, 0 mismatches
--- PASS: TestSimExplore (1.00s)
ok  	example/a	1.0s
`

func TestSums(t *testing.T) {
	var out strings.Builder
	if code := run(strings.NewReader(okRun), &out, 10000); code != 0 {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	for _, want := range []string{"sim total: 11000 seeds over 2 scenarios (a=6000 b=5000)", "3666.7 seeds/s per scenario run",
		"0 safety violations, 0 liveness failures", "seeds/s per scenario: a=3000.0 b=5000.0",
		"regression seeds replayed: b=17,45", `fixed 1-3000, drawn 1000000123-1000003122 (commit 0000000000ab)`, "drop-applied=5 wipe=1", "10 pairs compared, 0 mismatches", "seeds under a root: 1250", "sync after a reconnect: 1300",
		"sim seeds per CPU second per scenario (2.5s of CPU in all; garbage collection included): b=2000.0\n", "sim: ok"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "=== RUN") || strings.Contains(out.String(), "--- PASS") {
		t.Error("noise passed through")
	}
}

func TestFails(t *testing.T) {
	for name, in := range map[string]string{
		"too few seeds":     okRun,
		"liveness":          strings.Replace(okRun, "liveness=0", "liveness=1", 1),
		"class never fired": strings.Replace(okRun, "wipe:1", "wipe:0", 1),
		"mismatch":          strings.Replace(okRun, "0 mismatches", "1 mismatches", 1),
		"no seed rooted":    strings.Replace(okRun, "rooted=1250", "rooted=0", 1),
		"no seed synced":    strings.Replace(okRun, "synced=1300", "synced=0", 1),
		"go test failed":    okRun + "--- FAIL: TestX (0.00s)\n",
	} {
		min := 10000
		if name == "too few seeds" {
			min = 20000
		}
		var out strings.Builder
		if code := run(strings.NewReader(in), &out, min); code == 0 {
			t.Errorf("%s: exit 0:\n%s", name, out.String())
		}
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// go-zookeeper v1.0.4's own integration tests, run through its harness
// (ZOOKEEPER_BIN_PATH/zkServer.sh start-foreground zoo.cfg) against
// Debian's ZooKeeper 3.8.0 and against this directory's launcher: the
// tests that pass on one pass on the other, but for gozkDiffs. The full
// suite takes minutes on the real server; by default a subset runs
// (gozkSubset), GOZK_SUITE=full runs all. Results and timings:
// GOZK_SUITE.md.

// gozkDiffs are the tests whose outcome differs, each with its reason.
var gozkDiffs = map[string]string{
	"TestIntegration_BasicCluster":             "a 3-server ensemble: fakezk serves each server standalone, with a tree of its own, so a node created through one server is not seen through another",
	"TestIntegration_ClientClusterFailover":    "a 3-server ensemble (as BasicCluster): after the failover the client's session and its node are on another, unrelated, tree",
	"TestIntegration_NoQuorum":                 "a 3-server ensemble: stopping two servers leaves the third serving alone, where a real ensemble loses its quorum",
	"TestIntegration_DNSHostProviderReconnect": "a 3-server ensemble: when its server stops, the client moves to another that has seen no zxid of its (its own tree) and refuses it at the handshake",
}

// gozkSubset is what runs by default: one server each (no known
// difference), the calls a client makes most (create of every mode,
// multi, watches, ACLs and authentication, the lock recipe, session
// states), in a fraction of the full suite's time (GOZK_SUITE.md).
const gozkSubset = "^(TestIntegration_Create|TestIntegration_CreateTTL|TestIntegration_Multi|TestIntegration_ChildWatch|TestIntegration_GetSetACL|TestIntegration_Auth|TestIntegration_Lock|TestIntegration_StateChanges)$"

func TestGoZookeeperSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("go-zookeeper's suite runs real servers: not in -short")
	}
	zkserver.Require(t)
	src := gozkSource(t)
	run := gozkSubset
	if os.Getenv("GOZK_SUITE") == "full" {
		run = "."
	}
	// Side by side: the wall time of the slower, the real server's JVMs.
	var real suiteRun
	done := make(chan error, 1)
	go func() {
		var err error
		real, err = runGozk(src, "/usr/share/zookeeper/bin", run)
		done <- err
	}()
	fake, err := runGozk(src, binDir, run)
	if err != nil {
		t.Error(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if t.Failed() {
		return
	}
	t.Logf("real 3.8.0: %d passed in %s; fakezk: %d passed in %s", len(real.passed()), real.wall, len(fake.passed()), fake.wall)
	t.Logf("passed on real 3.8.0: %s", strings.Join(real.passed(), " "))
	t.Logf("passed on fakezk:     %s", strings.Join(fake.passed(), " "))
	for _, name := range union(real.passed(), fake.passed()) {
		r, f := real.result[name] == "pass", fake.result[name] == "pass"
		if r == f {
			continue
		}
		top, _, _ := strings.Cut(name, "/")
		if reason, ok := gozkDiffs[top]; ok {
			t.Logf("%s: real %s, fakezk %s: a known difference: %s", name, real.result[name], fake.result[name], reason)
			continue
		}
		t.Errorf("%s: real %s, fakezk %s, not a known difference\nreal:\n%s\nfakezk:\n%s",
			name, real.result[name], fake.result[name], real.output[name], fake.output[name])
	}
	if len(real.passed()) == 0 {
		t.Error("nothing passed on the real server: the harness does not reach it")
	}
}

// gozkSource copies go-zookeeper v1.0.4's module (read-only in the module
// cache) to a temporary directory, patched in one place (patchHarness).
func gozkSource(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/go-zookeeper/zk@v1.0.4").Output()
	if err != nil {
		t.Fatalf("go mod download github.com/go-zookeeper/zk@v1.0.4: %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download: %v (%s)", err, out)
	}
	dst := t.TempDir()
	err = filepath.WalkDir(mod.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(mod.Dir, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	patchHarness(t, dst)
	return dst
}

// patchHarness changes how the harness decides a server is up, in the
// copy: it parses the srvr answer's first line with a pattern that
// Debian's 3.8.0 does not match ("Zookeeper version:
// 3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC": the build did
// not fill the commit in, and the date is not MM/dd/yyyy), so it never
// sees that server up. The patched wait asks srvr and takes the answer
// of a serving server ("Zxid:" and "Mode:" lines) as up, whatever its
// version line. It runs against both servers alike.
func patchHarness(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, "server_help_test.go")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const old = "_, ok := FLWSrvr(serverAddrs, time.Second)"
	if bytes.Count(b, []byte(old)) != 1 {
		t.Fatalf("%s: the harness's wait (%q) is not where it was", path, old)
	}
	b = bytes.Replace(b, []byte(old), []byte("ok := serving(serverAddrs)"), 1)
	b = append(b, []byte(`
// serving reports that every server answers srvr as a serving server does.
func serving(addrs []string) bool {
	for _, addr := range addrs {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		c.SetDeadline(time.Now().Add(time.Second))
		c.Write([]byte("srvr"))
		out, _ := io.ReadAll(c)
		c.Close()
		if !strings.Contains(string(out), "Zxid:") || !strings.Contains(string(out), "Mode:") {
			return false
		}
	}
	return true
}
`)...)
	b = bytes.Replace(b, []byte("import (\n"), []byte("import (\n\t\"net\"\n"), 1)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// suiteRun is one run of the suite: each test's outcome and output.
type suiteRun struct {
	result map[string]string // pass, fail, skip
	output map[string]string
	wall   time.Duration
}

func (r suiteRun) passed() []string {
	var out []string
	for name, res := range r.result {
		if res == "pass" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func union(a, b []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(a), b...))))
}

// runGozk runs the suite in src with ZOOKEEPER_BIN_PATH=bin.
func runGozk(src, bin, run string) (suiteRun, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-json", "-timeout", "14m", "-run", run, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "ZOOKEEPER_BIN_PATH="+bin, "GOFLAGS=-mod=mod")
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	out, err := cmd.Output()
	r := suiteRun{result: map[string]string{}, output: map[string]string{}, wall: time.Since(start).Round(time.Second)}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct{ Action, Test, Output string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			r.result[ev.Test] = ev.Action
		case "output":
			if !strings.Contains(ev.Output, "SLF4J") {
				r.output[ev.Test] += ev.Output
			}
		}
	}
	if len(r.result) == 0 {
		return r, fmt.Errorf("go test in %s with ZOOKEEPER_BIN_PATH=%s: %v, no results\n%s", src, bin, err, out)
	}
	return r, nil
}

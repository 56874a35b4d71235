package examples_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// notRun are the examples the copy test builds but does not run: secure
// needs a real server with TLS, idpersist waits out a session timeout of
// real time (its own test runs it).
var notRun = map[string]bool{"secure": true, "idpersist": true}

// Every example can be copied out of this repository: its directory's
// program files, put into a new module that requires this one (through a
// replace directive pointing at this checkout, as `go get` would fetch
// it), build offline from the module cache, and each runs to its verified
// summary on the embedded fakezk. An example that is a module of its own
// (fence needs bbolt, metrics OpenTelemetry and Prometheus) is copied into
// a module of its own with its go.mod's requirements, the replace
// directives pointing at this checkout's modules.
func TestExamplesBuildFromACopy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every example in a new module")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	checkout, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	goMod, err := os.ReadFile(filepath.Join(checkout, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := ""
	for line := range strings.Lines(string(goMod)) {
		if strings.HasPrefix(line, "go ") {
			goLine = line
		}
	}
	if !strings.HasPrefix(string(goMod), "module github.com/zkflow/zkflow\n") || goLine == "" {
		t.Fatalf("%s/go.mod is not this module's", checkout)
	}

	mod := t.TempDir()
	var names, own []string
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "internal" || e.Name() == "testdata" {
			continue
		}
		if _, err := os.Stat(filepath.Join(e.Name(), "go.mod")); err == nil {
			own = append(own, e.Name())
			continue
		}
		if n := copyProgram(t, e.Name(), filepath.Join(mod, e.Name())); n == 0 {
			t.Fatalf("examples/%s has no program file", e.Name())
		}
		names = append(names, e.Name())
	}
	if len(names) < 2 || len(own) < 2 {
		t.Fatalf("found %d examples in this module and %d in modules of their own", len(names), len(own))
	}
	// The new module: what `go mod init` and `go get` would leave, with
	// this checkout in place of the published module. go.sum holds the
	// checksums of this module's requirements, as `go get` writes them.
	write(t, filepath.Join(mod, "go.mod"), "module example.com/copied\n\n"+goLine+
		"\nrequire github.com/zkflow/zkflow v0.0.0\n\nreplace github.com/zkflow/zkflow => "+checkout+"\n")
	sum, err := os.ReadFile(filepath.Join(checkout, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(mod, "go.sum"), string(sum))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(mod, "bin")
	build := exec.CommandContext(ctx, goBin, "build", "-o", bin+string(filepath.Separator), "./...")
	build.Dir = mod
	// Offline: the requirements come from the module cache or not at all;
	// the module's own go.mod is completed as a user's first build does.
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the copied examples: %v\n%s", err, out)
	}
	for _, name := range own {
		dst := filepath.Join(t.TempDir(), name)
		if n := copyProgram(t, name, dst); n == 0 {
			t.Fatalf("examples/%s has no program file", name)
		}
		write(t, filepath.Join(dst, "go.mod"), copiedGoMod(t, name))
		sum, err := os.ReadFile(filepath.Join(name, "go.sum"))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dst, "go.sum"), string(sum))
		build := exec.CommandContext(ctx, goBin, "build", "-o", filepath.Join(bin, name), ".")
		build.Dir = dst
		build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building the copied %s: %v\n%s", name, err, out)
		}
		names = append(names, name)
	}

	for _, name := range names {
		if notRun[name] {
			if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
				t.Errorf("%s was not built: %v", name, err)
			}
			continue
		}
		t.Run(name, func(t *testing.T) {
			args := []string{"-seed", "2"}
			if name == "metrics" {
				args = append(args, "-listen", "127.0.0.1:0")
			}
			run := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
			out, err := run.CombinedOutput()
			if err != nil || !strings.HasSuffix(string(out), "\nOK\n") || strings.Contains(string(out), "FAILED") {
				t.Fatalf("the copied %s: %v\n%s", name, err, out)
			}
		})
	}
}

// copyProgram copies the program files of dir (its .go files but the
// tests, which use this repository's internal helpers) to dst and returns
// how many it copied.
func copyProgram(t *testing.T, dir, dst string) int {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "zkflow/internal/") || strings.Contains(string(b), "zkflow/examples/") {
			t.Errorf("%s imports a package a copy cannot", f)
		}
		write(t, filepath.Join(dst, filepath.Base(f)), string(b))
		n++
	}
	return n
}

// copiedGoMod is the go.mod of a copy of the example in dir, a module of
// its own: its requirements as they are, under a new module path, with
// each replace directive's relative path made absolute (the checkout's
// modules, in place of the published ones).
func copiedGoMod(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	replaced := 0
	for line := range strings.Lines(string(b)) {
		switch {
		case strings.HasPrefix(line, "module "):
			line = "module example.com/copied/" + dir + "\n"
		case strings.HasPrefix(line, "replace "):
			from, to, ok := strings.Cut(strings.TrimSpace(line), " => ")
			if !ok || !strings.HasPrefix(to, ".") {
				t.Fatalf("%s/go.mod: a replace directive this test cannot rewrite: %q", dir, line)
			}
			abs, err := filepath.Abs(filepath.Join(dir, to))
			if err != nil {
				t.Fatal(err)
			}
			line = from + " => " + abs + "\n"
			replaced++
		}
		out.WriteString(line)
	}
	if replaced == 0 {
		t.Fatalf("%s/go.mod has no replace directive to this checkout", dir)
	}
	return out.String()
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

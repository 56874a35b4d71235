package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// The test binary is the command when runMain is set: the tests run it as a
// child process, as make vet and go vet run the command.
const runMain = "FLOWCHECK_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMain) == "1" {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// runIn runs name (the command when name is "") in ../../testdata/mod, a
// module of its own with a stub task package, and returns its output and
// exit status.
func runIn(t *testing.T, name string, args ...string) (string, int) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if name == "" {
		name = self
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "mod"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), runMain+"=1", "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	return "", 0
}

// On a package with a bad flow the command fails (status 3) and names the
// finding; on a clean one it passes silently.
func TestCommand(t *testing.T) {
	const want = "app/bad/bad.go:8:10: flow body receives from a channel: a flow suspends only at task.Await"
	for _, tc := range []struct {
		pattern string
		status  int
	}{
		{"./app/bad", 3},
		{"./app/...", 3},
		{"./app/good", 0},
	} {
		out, status := runIn(t, "", tc.pattern)
		if status != tc.status {
			t.Errorf("flowcheck %s: exit status %d, want %d; output:\n%s", tc.pattern, status, tc.status, out)
		}
		if found := strings.Contains(out, want); found != (tc.status != 0) {
			t.Errorf("flowcheck %s: output has %q: %v, want %v; output:\n%s", tc.pattern, want, found, !found, out)
		}
		if tc.status == 0 && out != "" {
			t.Errorf("flowcheck %s: output %q, want none", tc.pattern, out)
		}
	}
}

// As a go vet tool it fails on the bad flow and passes the clean one.
func TestVetTool(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, status := runIn(t, "go", "vet", "-vettool="+self, "./app/bad")
	if status == 0 || !strings.Contains(out, "flow body receives from a channel") {
		t.Errorf("go vet -vettool on app/bad: exit status %d, output:\n%s", status, out)
	}
	out, status = runIn(t, "go", "vet", "-vettool="+self, "./app/good")
	if status != 0 {
		t.Errorf("go vet -vettool on app/good: exit status %d, output:\n%s", status, out)
	}
}

// A package that does not compile is an error (status 1) that names the
// cause, not a panic or a silent pass.
func TestBrokenPackage(t *testing.T) {
	out, status := runIn(t, "", "./broken")
	if status != 1 || !strings.Contains(out, "broken.go:8:10: undefined: undefined") || strings.Contains(out, "panic") {
		t.Errorf("flowcheck ./broken: exit status %d, want 1 with the compiler's error; output:\n%s", status, out)
	}
}

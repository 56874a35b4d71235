// Package modgraph checks what a program that uses zkflow pulls into its
// module graph: a new module importing every public package of the root
// module (the runtime, fakezk and its simulation, the adapter and the
// recipes) must list only the modules those packages and their tests need.
// The packages whose requirements are heavy (executor/otelzk,
// recipes/fence/boltstore, task/flowcheck and the examples that use them)
// are modules of their own and are not imported.
package modgraph

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// allowed are the modules a user's graph may list besides zkflow itself
// and the go and toolchain lines: go-zookeeper (the client), clock (the
// executor's clock), porcupine (fakezk/sim's linearizability checker) and
// goleak (required by the root module for its tests; its own requirements
// are pruned from a user's graph).
var allowed = []string{
	"github.com/anishathalye/porcupine",
	"github.com/benbjohnson/clock",
	"github.com/go-zookeeper/zk",
	"go.uber.org/goleak",
}

func TestUserGraphListsOnlyTheCoreRequirements(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command on a new module")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	checkout, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	gocmd := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, goBin, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.Output()
		if err != nil {
			msg := ""
			if ee, ok := err.(*exec.ExitError); ok {
				msg = string(ee.Stderr)
			}
			t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, msg)
		}
		return string(out)
	}

	// Every importable package of the root module but the examples, the
	// benchmark harness and the internal packages.
	var pkgs []string
	for p := range strings.FieldsSeq(gocmd(checkout, "list", "-f", "{{if and (ne .Name \"main\") .GoFiles}}{{.ImportPath}}{{end}}", "./...")) {
		if strings.Contains(p, "/internal/") || strings.Contains(p, "/examples/") || strings.HasSuffix(p, "/internal") {
			continue
		}
		pkgs = append(pkgs, p)
	}
	for _, want := range []string{
		"github.com/zkflow/zkflow/task", "github.com/zkflow/zkflow/executor",
		"github.com/zkflow/zkflow/fakezk", "github.com/zkflow/zkflow/fakezk/sim",
		"github.com/zkflow/zkflow/recipes/lock", "github.com/zkflow/zkflow/recipes/fence",
		"github.com/zkflow/zkflow/zkadapter",
	} {
		if !slices.Contains(pkgs, want) {
			t.Fatalf("go list did not list %s: %q", want, pkgs)
		}
	}
	for _, moved := range []string{"/executor/otelzk", "/recipes/fence/boltstore", "/task/flowcheck"} {
		for _, p := range pkgs {
			if strings.HasSuffix(p, moved) || strings.Contains(p, moved+"/") {
				t.Fatalf("%s is listed in the root module; it must be a module of its own", p)
			}
		}
	}

	// The user's module: a program importing them all, what `go mod init`,
	// `go get` and `go mod tidy` leave, with this checkout in place of the
	// published module.
	mod := t.TempDir()
	var src strings.Builder
	src.WriteString("package main\n\nimport (\n")
	for _, p := range pkgs {
		src.WriteString("\t_ \"" + p + "\"\n")
	}
	src.WriteString(")\n\nfunc main() {}\n")
	write(t, filepath.Join(mod, "main.go"), src.String())
	write(t, filepath.Join(mod, "go.mod"), "module example.com/user\n\ngo 1.26\n\nrequire github.com/zkflow/zkflow v0.0.0\n\nreplace github.com/zkflow/zkflow => "+checkout+"\n")
	sum, err := os.ReadFile(filepath.Join(checkout, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(mod, "go.sum"), string(sum))
	gocmd(mod, "mod", "tidy")

	graph := gocmd(mod, "mod", "graph")
	seen := map[string]bool{}
	for line := range strings.Lines(graph) {
		for _, node := range strings.Fields(line) {
			path, _, _ := strings.Cut(node, "@")
			seen[path] = true
		}
	}
	for path := range seen {
		switch {
		case path == "example.com/user", path == "github.com/zkflow/zkflow", path == "go", path == "toolchain":
		case slices.Contains(allowed, path):
		default:
			t.Errorf("the graph lists %s, which a program using the core and the recipes must not get", path)
		}
	}
	// The graph is the one of a program that builds on zkflow: it lists
	// the client the recipes talk to.
	for _, want := range []string{"github.com/zkflow/zkflow", "github.com/go-zookeeper/zk", "github.com/benbjohnson/clock"} {
		if !seen[want] {
			t.Errorf("the graph does not list %s:\n%s", want, graph)
		}
	}
	if t.Failed() {
		t.Logf("go mod graph:\n%s", graph)
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// flowcheck's command is run by users with `go run
// .../flowcheck/cmd/flowcheck@latest`, which the go command refuses for a
// module whose go.mod has replace or exclude directives: its go.mod must
// have none (it needs no other module of this repository).
func TestFlowcheckRunsAtAVersion(t *testing.T) {
	b, err := os.ReadFile("../../task/flowcheck/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "replace" || f[0] == "exclude") {
			t.Errorf("task/flowcheck/go.mod: %q: go run @version refuses it", strings.TrimSpace(line))
		}
	}
}

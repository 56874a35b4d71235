package flowcheck_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/task/flowcheck"
	"golang.org/x/tools/go/analysis/analysistest"
)

// Every forbidden construct in testdata/src/flows and in the stub task
// package is reported with its message (each // want), and nothing else
// there or in testdata/src/allowed is.
func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), flowcheck.Analyzer, "flows", "allowed", flowcheck.TaskPath)
}

// Package task, which every user imports, does not pay for the analyzer:
// it does not import golang.org/x/tools. Listed in the root module (this
// module's parent directory), where task lives.
func TestTaskDoesNotImportTools(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", flowcheck.TaskPath)
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", flowcheck.TaskPath, err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, flowcheck.TaskPath) {
		t.Fatalf("go list -deps %s does not list the package itself:\n%s", flowcheck.TaskPath, out)
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "golang.org/x/tools") {
			t.Errorf("%s imports %s", flowcheck.TaskPath, d)
		}
	}
}

package flowcheck_test

import (
	"testing"

	"github.com/zkflow/zkflow/task/flowcheck"
	"golang.org/x/tools/go/analysis/analysistest"
)

// Every forbidden construct in testdata/src/flows is reported with its
// message (each // want), and nothing else there or in
// testdata/src/allowed is.
func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), flowcheck.Analyzer, "flows", "allowed")
}

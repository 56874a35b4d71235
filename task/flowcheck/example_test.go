package flowcheck_test

import (
	"fmt"
	"path/filepath"

	"github.com/zkflow/zkflow/task/flowcheck"
	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"
)

// Running the analyzer from a program of one's own, on testdata/mod, a
// module with a flow that waits on a channel (app/bad) and one that
// suspends only at task.Await (app/good). To run it beside other
// analyzers, give it to multichecker.Main.
func Example() {
	cfg := &packages.Config{Mode: packages.LoadAllSyntax, Dir: filepath.Join("testdata", "mod")}
	pkgs, err := packages.Load(cfg, "./app/...")
	if err != nil {
		fmt.Println(err)
		return
	}
	graph, err := checker.Analyze([]*analysis.Analyzer{flowcheck.Analyzer}, pkgs, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, act := range graph.Roots {
		for _, d := range act.Diagnostics {
			pos := act.Package.Fset.Position(d.Pos)
			fmt.Printf("%s:%d: %s\n", filepath.Base(pos.Filename), pos.Line, d.Message)
		}
	}
	// Output:
	// bad.go:8: flow body receives from a channel: a flow suspends only at task.Await; wrap the wait in a Task (task.Suspend) and await it
}

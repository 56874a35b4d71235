//go:build !race && !zkflow_invariants

// In race and invariants builds Run wraps every continuation in a check
// of its own (an allocation): the counts below are of the other builds.

package executor_test

import (
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// A flow submitted with a continuation, unobserved, costs its record, its
// scope and RunIn's function: three allocations (the task prebuilt).
func TestSubmitAllocs(t *testing.T) {
	ex, err := executor.New(executor.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Shutdown()
	ex.RunUntilIdle()
	one := task.Value(1)
	n := 0
	k := func(v int, err error) {
		if v != 1 || err != nil {
			t.Fatalf("got %d, %v", v, err)
		}
		n++
	}
	allocs := testing.AllocsPerRun(100, func() {
		executor.Submit(ex, one, k)
		ex.RunUntilIdle()
	})
	if allocs > 3 {
		t.Errorf("a flow submitted and run: %v allocations, want 3 at most", allocs)
	}
	if n != 101 {
		t.Errorf("%d outcomes, want 101", n)
	}
}

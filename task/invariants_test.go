//go:build race || zkflow_invariants

package task_test

import (
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// In race and invariants builds, a task that calls its continuation twice
// is caught at the second call.
func TestContinuationCalledTwicePanics(t *testing.T) {
	ex, _ := executor.New(executor.Config{})
	defer ex.Shutdown()
	bad := task.Task[int](func(s *task.Scope, k task.Cont[int]) {
		k(1, nil)
		k(2, nil)
	})
	got := 0
	executor.Submit(ex, bad, func(int, error) { got++ })
	defer func() {
		if r := recover(); r != task.ErrContinuationReused {
			t.Fatalf("recovered %v, want ErrContinuationReused", r)
		}
		if got != 1 {
			t.Fatalf("continuation ran %d times before the panic", got)
		}
	}()
	ex.RunUntilIdle()
	t.Fatal("no panic")
}

package executor_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// A flow body that calls runtime.Goexit (t.FailNow in a flow) while Run
// drives the executor ends Run's goroutine (Goexit goes on to the caller
// of the body, as a panic does). The executor used to be left as it was:
// Close returned at once (Run's deferred end closed its done channel)
// and stopped nothing, the flow in flight never got an outcome, its body
// and the connection lived on. Run now stops the executor on its way
// out, as Close does: the flow in flight ends with task.ErrClosed, and
// nothing is left for the package's goleak check (no Shutdown here).
func TestGoexitInABodyUnderRunStopsTheExecutor(t *testing.T) {
	ex, _, _ := newServerExec(t)
	runDone := make(chan error, 1)
	go func() { runDone <- ex.Run(context.Background()) }()

	// A: a flow in flight that waits (an hour on the server's clock,
	// which nobody moves).
	waiting := task.Flow(func(f *task.F) (int, error) {
		_, err := task.Await(f, c.Sleep(time.Hour))
		return 1, err
	})
	aDone := make(chan error, 1)
	started := make(chan struct{})
	executor.Submit(ex, task.Task[int](func(s *task.Scope, k task.Cont[int]) {
		close(started)
		task.Run(s, waiting, k)
	}), func(_ int, err error) { aDone <- err })
	<-started

	// B: a body that ends its goroutine (what t.FailNow does).
	inB := make(chan struct{})
	executor.Submit(ex, task.Flow(func(f *task.F) (int, error) {
		close(inB) // (the body is under way: Close below comes after)
		runtime.Goexit()
		return 0, nil
	}), func(int, error) {})

	<-inB
	// Close: Run must stop the executor, A must get ErrClosed.
	closed := make(chan struct{})
	go func() { ex.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	select {
	case err := <-aDone:
		if !errors.Is(err, task.ErrClosed) {
			t.Errorf("flow in flight ended with %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("Close returned, but the flow in flight never got its outcome (Run's goroutine is gone)")
	}
	select {
	case err := <-runDone:
		t.Errorf("Run returned %v: its goroutine was to end in the Goexit", err)
	default:
	}
}

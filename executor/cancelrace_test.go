package executor_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// Two cancels of one flow from two goroutines (Flow.Cancel and an Await
// whose deadline passed) end the flow with the error the first recorded,
// whatever order their jobs reach the executor in: the flow's outcome and
// what a flow not yet started is canceled with agree.
func TestConcurrentCancelsAgree(t *testing.T) {
	for _, started := range []bool{true, false} {
		srv := fakezk.New(fakezk.Config{})
		ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{})})
		if err != nil {
			t.Fatal(err)
		}
		var got error
		n := 0
		f := executor.Submit(ex, never, func(_ int, err error) { got, n = err, n+1 })
		if started {
			for ex.RunUntilIdle()+srv.RunUntilIdle() > 0 {
			}
		}
		executor.CancelInterleaved(f, task.ErrCanceled, task.ErrDeadlineExceeded)
		for ex.RunUntilIdle()+srv.RunUntilIdle() > 0 {
		}
		if n != 1 || !errors.Is(got, task.ErrCanceled) {
			t.Errorf("started %v: the flow ended %d times, with %v; want once, with the first cancel's %v", started, n, got, task.ErrCanceled)
		}
		ex.Shutdown()
	}
}

package executor_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// executor/doc.go: "Once Close has been called or Run's ctx has ended,
// Submit and Await refuse work with task.ErrClosed, at once"; Await's doc:
// "After Close, or once Run's ctx has ended, Await returns task.ErrClosed
// at once and submits nothing." The package doc's own example passes the
// same ctx to Run and to the blocking calls (go ex.Run(ctx); ex.Get(ctx,
// ...)). Then, once that ctx had ended, Await and Get returned
// task.ErrCanceled, not task.ErrClosed; also after Close, for any ended
// ctx. The executor's refusal now comes first.
func TestAwaitWithRunsEndedCtxSaysClosed(t *testing.T) {
	ex, _, _ := newServerExec(t)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- ex.Run(ctx) }()
	if _, err := ex.Exists(context.Background(), "/"); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-runDone
	_, err := executor.Await(ctx, ex, task.Value(1))
	if !errors.Is(err, task.ErrClosed) {
		t.Errorf("Await(Run's ended ctx) after Run stopped: %v, want task.ErrClosed", err)
	}
	_, err = ex.Get(ctx, "/")
	if !errors.Is(err, task.ErrClosed) {
		t.Errorf("Get(Run's ended ctx) after Run stopped: %v, want task.ErrClosed", err)
	}
}

package executor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

// Abandon unwinds the flow bodies suspended in its flows; their deferred
// functions run (FLOWS.md). A deferred executor.Await there is a blocking
// call on the executor (the doc: ErrOnExecutor): it was let through, as
// no executor was counted as driven, submitted to the abandoned executor
// and waited, Abandon in lockstep with it, until its context ended (this
// test failed after 2 s on the code before the fix; with
// context.Background both hang).
func TestBlockingCallInABodysDeferDuringAbandon(t *testing.T) {
	r := rig.New(t)
	var deferred error = errors.New("not run")
	rig.Submit(r, task.Flow(func(f *task.F) (int, error) {
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // a guard: Background would hang
			defer cancel()
			_, deferred = executor.Await(ctx, r.Ex, task.Value(1)) //flowcheck:allow the test checks that the call is refused
		}()
		task.Await(f, task.Get("/a"))
		return 0, nil
	}))
	r.Idle()
	start := time.Now()
	r.Ex.Abandon()
	if !errors.Is(deferred, executor.ErrOnExecutor) {
		t.Fatalf("executor.Await in a deferred function of a body being unwound = %v after %v, want ErrOnExecutor at once", deferred, time.Since(start).Round(time.Millisecond))
	}
}

package executor_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/internal/scriptconn"
	"github.com/zkflow/zkflow/task"
)

// The package doc: "A flow submitted while the session is suspended
// waits, but its deadline and Flow.Cancel end it at once." A deadline
// that has come already (now, or past) when the flow is submitted while
// suspended armed a timer of 0 on the clock, which a fake clock fires
// only when it next moves: the flow waited (this test failed on the code
// before the fix: its continuation not called).
func TestQueuedFlowPastItsDeadlineWhileSuspended(t *testing.T) {
	conn := scriptconn.New()
	clk := fakezk.NewClock(time.Time{})
	ex, err := executor.New(executor.Config{Conn: conn, Clock: clk, Seed: 1, OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ex.Shutdown)
	ex.RunUntilIdle()
	conn.Connect(1)
	ex.RunUntilIdle()
	clk.Advance(time.Minute)
	conn.Suspend()
	ex.RunUntilIdle()
	for _, at := range []time.Time{clk.Now(), clk.Now().Add(-time.Second)} {
		o := &rig.Outcome[task.Unit]{}
		executor.SubmitWith(ex, task.Done, executor.Options{Deadline: at}, o.K)
		ex.RunUntilIdle()
		o.Want(t, 1, task.ErrDeadlineExceeded)
	}
}

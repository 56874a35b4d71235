package executor_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/scriptconn"
	"github.com/zkflow/zkflow/task"
)

// Close's doc: once it has returned, "Every flow in flight ends with
// task.ErrClosed"; Run's: "Run after Close ... stops it at once (its
// queued flows end with task.ErrClosed, none runs)". With no Run to wait
// for (Step driving), Close returns before the shutdown; a Flow.Cancel
// made after it returned, or the deadline of a flow that waits in the
// queue passing after it, posts a job that the shutdown's first drain
// ran before the flow's start (events before tasks): the queued flow
// ended with task.ErrCanceled, or past its deadline, not with
// task.ErrClosed, while a started flow canceled the same way got
// task.ErrClosed (the shutdown ends its scope first). Under Run, Close
// waits for the shutdown, and the same calls find the flow ended.
func TestQueuedFlowEndsClosedWhateverComesAfterClose(t *testing.T) {
	for _, tc := range []struct {
		name      string
		suspended bool // the session is suspended: the flow waits in the queue
		after     func(f *executor.Flow, clk *fakezk.Clock)
	}{
		{"cancel", false, func(f *executor.Flow, _ *fakezk.Clock) { f.Cancel() }},
		{"cancel while suspended", true, func(f *executor.Flow, _ *fakezk.Clock) { f.Cancel() }},
		{"deadline while suspended", true, func(_ *executor.Flow, clk *fakezk.Clock) { clk.Advance(2 * time.Second) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := scriptconn.New()
			clk := fakezk.NewClock(time.Time{})
			ex, err := executor.New(executor.Config{Conn: conn, Clock: clk, Seed: 1, OnError: func(error) {}})
			if err != nil {
				t.Fatal(err)
			}
			ex.RunUntilIdle()
			conn.Connect(1)
			ex.RunUntilIdle()
			if tc.suspended {
				conn.Suspend()
				ex.RunUntilIdle()
			}
			var got []error
			f := executor.SubmitWith(ex, never, executor.Options{Deadline: clk.Now().Add(time.Second)},
				func(_ int, err error) { got = append(got, err) })
			if tc.suspended {
				ex.RunUntilIdle() // the deadline is armed; the flow waits for the reconnect
			}
			ex.Close() // no Run: returns before the shutdown
			tc.after(f, clk)
			ex.RunUntilIdle()
			if len(got) != 1 || !errors.Is(got[0], task.ErrClosed) {
				t.Errorf("the queued flow ended with %v; want once, with task.ErrClosed (Close had returned)", got)
			}
		})
	}
}

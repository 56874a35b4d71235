package otelzk_test

import (
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// METRICS.md: zkflow.executor.queue.depth is the length of the executor's
// event and task queues. 50 flows submitted at once and run to completion
// leave both queues empty: the gauge says so, not the depth it last heard
// while they were queued.
func TestQueueDepthGaugeAtIdle(t *testing.T) {
	r := newRig(t)
	for range 50 {
		executor.Submit(r.ex, task.Value(1), nil)
	}
	r.drive()
	if n := r.ex.RunUntilIdle(); n != 0 {
		t.Fatalf("not idle: %d jobs ran", n)
	}
	q := sums(t, r.collect(t)["zkflow.executor.queue.depth"])
	if q["[zkflow.queue=tasks]"] != 0 || q["[zkflow.queue=events]"] != 0 {
		t.Fatalf("idle executor, empty queues: zkflow.executor.queue.depth = %v", q)
	}
}

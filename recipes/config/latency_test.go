package config

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// WriteToHandlerLatency measures, n times, the time from submitting a Set
// of path on writer's session to the handler of a Watch of path on
// reader's session seeing the new value, one write at a time, and returns
// the n latencies. It creates path (its parent must exist) and deletes it
// at the end. Times come from writer's clock (the executor's injected
// clock: real time in production). Both executors must be running
// (executor.Run). It is the package's benchmark and tests' measure, in a
// test file: not part of the API. WithACL sets the ACL path is created with.
func WriteToHandlerLatency(ctx context.Context, reader, writer *executor.Executor, path string, n int, opts ...Option) ([]time.Duration, error) {
	if reader == nil || writer == nil {
		return nil, fmt.Errorf("config: nil executor: %w", task.ErrInvalidArgument)
	}
	if n < 0 {
		return nil, fmt.Errorf("config: negative count %d: %w", n, task.ErrInvalidArgument)
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	if _, err := executor.Await(ctx, writer, zkops.Create(path, []byte("0"), task.Persistent, o.acl)); err != nil {
		return nil, err
	}
	cleanup := func(ex *executor.Executor, t task.Task[task.Unit]) { // best effort, bounded
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, _ = executor.Await(cctx, ex, t)
	}
	defer cleanup(writer, task.Delete(path, -1))
	seen := make(chan int, 1)
	w, err := executor.Await(ctx, reader, Watch(path, func(s Snapshot) {
		v, _ := strconv.Atoi(string(s.Data))
		select {
		case <-seen: // drop an older value nobody waits for
		default:
		}
		seen <- v
	}))
	if err != nil {
		return nil, err
	}
	defer cleanup(reader, w.Stop())
	clock := writer.Clock()
	out := make([]time.Duration, 0, n)
	for i := 1; i <= n; i++ {
		start := clock.Now()
		if _, err := executor.Await(ctx, writer, task.Set(path, []byte(strconv.Itoa(i)), -1)); err != nil {
			return out, err
		}
		for v := 0; v != i; {
			select {
			case v = <-seen:
			case <-ctx.Done():
				return out, task.ErrDeadlineExceeded
			}
		}
		out = append(out, clock.Now().Sub(start))
	}
	return out, nil
}

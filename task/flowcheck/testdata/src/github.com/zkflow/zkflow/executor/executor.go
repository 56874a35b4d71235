package executor

import (
	"context"

	"github.com/zkflow/zkflow/task"
)

type Executor struct{}

func (e *Executor) Run(ctx context.Context) error { return nil }

func (e *Executor) Close() error { return nil }

func Await[T any](ctx context.Context, e *Executor, t task.Task[T]) (T, error) {
	var zero T
	return zero, nil
}

func AwaitAcrossExpiry[T any](ctx context.Context, e *Executor, t task.Task[T]) (T, error) {
	var zero T
	return zero, nil
}

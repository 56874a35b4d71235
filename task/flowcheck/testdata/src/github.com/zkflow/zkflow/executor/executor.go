package executor

import (
	"context"

	"github.com/zkflow/zkflow/task"
)

type Executor struct{}

func (e *Executor) Run(ctx context.Context) error { return nil }

func (e *Executor) Close() error { return nil }

// CloseWhenDone takes a context but does not block: it is called on the
// executor goroutine.
func (e *Executor) CloseWhenDone(ctx context.Context) {}

func Await[T any](ctx context.Context, e *Executor, t task.Task[T]) (T, error) {
	var zero T
	return zero, nil
}

func AwaitAcrossExpiry[T any](ctx context.Context, e *Executor, t task.Task[T]) (T, error) {
	var zero T
	return zero, nil
}

type Flow struct{}

func Submit[T any](e *Executor, t task.Task[T], k task.Cont[T]) *Flow { return nil }

type Options struct{}

func SubmitWith[T any](e *Executor, t task.Task[T], opts Options, k task.Cont[T]) *Flow { return nil }

// The blocking face of the plain operations (ops.go): executor.Await of
// the operation's task.
func (e *Executor) Get(ctx context.Context, path string) ([]byte, error) { return nil, nil }

func (e *Executor) Set(ctx context.Context, path string, data []byte, version int32) (int64, error) {
	return 0, nil
}

func (e *Executor) Create(ctx context.Context, path string, data []byte, mode int) (string, error) {
	return "", nil
}

func (e *Executor) Delete(ctx context.Context, path string, version int32) error { return nil }

func (e *Executor) Children(ctx context.Context, path string) ([]string, error) { return nil, nil }

func (e *Executor) Exists(ctx context.Context, path string) (*int64, error) { return nil, nil }

func (e *Executor) Multi(ctx context.Context, ops ...int) ([]int, error) { return nil, nil }

func (e *Executor) Sync(ctx context.Context, path string) error { return nil }

// Drain stands for any other exported function of the package that takes a
// context first: it blocks.
func Drain(ctx context.Context, e *Executor) error { return nil }

// A method that takes a context but not first is not a blocking face.
func (e *Executor) Named(name string, ctx context.Context) string { return name }

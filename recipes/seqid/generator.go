package seqid

import (
	"context"
	"fmt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// Generator is the blocking API: it runs the recipe's tasks on an executor
// that someone runs (executor.Run) and waits for them. Its methods are safe
// for concurrent use from any goroutine.
type Generator struct {
	ex   *executor.Executor
	next task.Task[int64]
}

// NewGenerator returns a generator on the sequence at path, run by ex.
// With blockSize 1 each ID costs one compare-and-set; with more, IDs come
// from an Allocator that reserves blockSize at a time (a gap of at most
// blockSize-1 per generator that stops). blockSize < 1 fails with
// ErrBadCount.
func NewGenerator(ex *executor.Executor, path string, blockSize int64) (*Generator, error) {
	if ex == nil {
		return nil, fmt.Errorf("%w: nil executor", task.ErrInvalidArgument)
	}
	if blockSize == 1 {
		return &Generator{ex: ex, next: Next(path)}, nil
	}
	a, err := NewAllocator(path, blockSize)
	if err != nil {
		return nil, err
	}
	return &Generator{ex: ex, next: a.Next()}, nil
}

// Next returns a new ID, or an error once ctx ends (task.ErrCanceled or
// task.ErrDeadlineExceeded, matching ctx's error under errors.Is), the
// executor closes, or the recipe fails (ErrVersionWrapped, ...). When the
// session expires during a call, Next tries again on the next session:
// nothing was handed out. IDs returned to calls that do not overlap in
// time increase.
func (g *Generator) Next(ctx context.Context) (int64, error) {
	return executor.AwaitAcrossExpiry(ctx, g.ex, g.next)
}

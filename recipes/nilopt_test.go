package recipes_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/recipes/cache"
	"github.com/zkflow/zkflow/recipes/config"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/recipes/group"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// A nil option is bad input, refused with task.ErrInvalidArgument by every
// recipe's constructor (and by the task-returning functions, as the task's
// error), never a panic.
func TestNilOptionRefused(t *testing.T) {
	for name, mk := range map[string]func() error{
		"lock":         func() error { _, err := lock.New("/d", nil); return err },
		"rwlock":       func() error { _, err := rwlock.New("/d", nil); return err },
		"semaphore":    func() error { _, err := semaphore.New("/d", 2, nil); return err },
		"queue":        func() error { _, err := queue.New("/d", nil); return err },
		"group":        func() error { _, err := group.New("/d", nil); return err },
		"barrier":      func() error { _, err := barrier.New("/d", nil); return err },
		"double":       func() error { _, err := barrier.NewDouble("/d", 2, nil); return err },
		"counter":      func() error { _, err := seqid.NewCounter("/d", nil); return err },
		"allocator":    func() error { _, err := seqid.NewAllocator("/d", 10, nil); return err },
		"seqid.Next":   func() error { return failed(seqid.Next("/d", nil)) },
		"config":       func() error { return failed(config.Update("/d", map[string][]byte{"a": nil}, nil)) },
		"election":     func() error { _, err := election.New("/d", nil); return err },
		"discovery":    func() error { _, err := discovery.New("/d", nil); return err },
		"masterworker": func() error { _, err := masterworker.New("/d", nil); return err },
		"partition":    func() error { _, err := partition.New("/d", []string{"a"}, nil); return err },
		"cache":        func() error { _, err := cache.NewNode("/d", nil); return err },
	} {
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: a nil option panicked: %v", name, p)
				}
			}()
			err = mk()
		}()
		if !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("%s: a nil option gave %v, want task.ErrInvalidArgument", name, err)
		}
	}
}

// failed runs tk on an executor of a fresh fakezk and returns its error.
func failed[T any](tk task.Task[T]) error {
	srv := fakezk.New(fakezk.Config{})
	defer srv.Close()
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{})})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); ex.Run(ctx) }()
	defer func() { cancel(); <-done }()
	_, err = executor.Await(ctx, ex, tk)
	return err
}

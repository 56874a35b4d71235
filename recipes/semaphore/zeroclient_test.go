package semaphore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/task"
)

// A nil or zero Client (not made by NewClient) is refused with
// task.ErrInvalidArgument by every method, at once: it panicked (a nil
// pointer dereference of its Semaphore).
func TestZeroClientRefused(t *testing.T) {
	ctx := context.Background()
	for name, c := range map[string]*semaphore.Client{"zero": {}, "nil": nil} {
		calls := map[string]func() error{
			"Acquire":     func() error { _, err := c.Acquire(ctx); return err },
			"TryAcquire":  func() error { _, err := c.TryAcquire(ctx); return err },
			"AcquireMany": func() error { _, err := c.AcquireMany(ctx, 2); return err },
			"Release":     func() error { return c.Release(ctx, &semaphore.Lease{}) },
			"Fenced":      func() error { _, err := c.Fenced(ctx, &semaphore.Lease{}); return err },
		}
		for call, f := range calls {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("%s of a %s Client panicked: %v", call, name, p)
					}
				}()
				if err := f(); !errors.Is(err, task.ErrInvalidArgument) {
					t.Errorf("%s of a %s Client = %v, want task.ErrInvalidArgument", call, name, err)
				}
			}()
		}
	}
}

package lock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// A nil or zero Client (not made by NewClient) is refused with
// task.ErrInvalidArgument by every method, at once: it panicked (a nil
// pointer dereference of its Lock).
func TestZeroClientRefused(t *testing.T) {
	ctx := context.Background()
	for name, c := range map[string]*lock.Client{"zero": {}, "nil": nil} {
		calls := map[string]func() error{
			"Acquire":    func() error { _, err := c.Acquire(ctx); return err },
			"TryAcquire": func() error { _, err := c.TryAcquire(ctx); return err },
			"Release":    func() error { return c.Release(ctx, &lock.Held{}) },
			"Fenced":     func() error { _, err := c.Fenced(ctx, &lock.Held{}); return err },
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

package cache

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/zkflow/zkflow/task"
)

// A nil *Client: Start fails with task.ErrInvalidArgument ("nil or zero
// Client"), as the sibling recipes' Clients do on every method (group,
// barrier); the other methods did not look at the receiver and panicked
// (a nil pointer's mutex). Next now fails as on a Client not started,
// and Current, Done, Err and Stop answer as before Start.
func TestNilClientMethodsDoNotPanic(t *testing.T) {
	var cl *Client
	call := func(name string, fn func() error) {
		t.Helper()
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			return fn()
		}()
		if err != nil {
			t.Errorf("%s on a nil Client: %v", name, err)
		}
	}
	ctx := context.Background()
	call("Start", func() error {
		if err := cl.Start(ctx); !errors.Is(err, task.ErrInvalidArgument) {
			return fmt.Errorf("%v, want task.ErrInvalidArgument", err)
		}
		return nil
	})
	call("Next", func() error {
		if _, err := cl.Next(ctx); !errors.Is(err, task.ErrInvalidArgument) {
			return fmt.Errorf("%v, want task.ErrInvalidArgument", err)
		}
		return nil
	})
	call("Current", func() error {
		if n := cl.Current(); n != nil {
			return fmt.Errorf("%v, want none", n)
		}
		return nil
	})
	call("Done", func() error {
		if cl.Done() != nil {
			return fmt.Errorf("a channel, want nil (as before Start)")
		}
		return nil
	})
	call("Err", func() error { return cl.Err() })
	call("Stop", func() error { return cl.Stop(ctx) })
}

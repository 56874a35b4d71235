package executor_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// A nil subscriber registers nothing, as a nil Scope.OnDone callback
// does: the next session event (here the Closed of the shutdown) does not
// call it and so does not panic in the job that applies it.
func TestNilSubscriberRegistersNothing(t *testing.T) {
	ex, _, _ := newServerExec(t)
	var cancel func()
	executor.Submit(ex, task.Func(func(s *task.Scope) (task.Unit, error) {
		cancel = s.Subscribe(nil)
		return task.Unit{}, nil
	}), nil)
	ex.RunUntilIdle()
	if cancel == nil {
		t.Fatal("Subscribe(nil) returned no cancel function")
	}
	defer cancel()
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("the shutdown panicked on a nil subscriber: %v", p)
			}
		}()
		ex.Shutdown()
	}()
}

// A nil context is bad input like a nil task: Await, AwaitAcrossExpiry,
// the blocking operations and Run refuse it with an error matching
// task.ErrInvalidArgument, and Run leaves the executor undisturbed (a
// later Run drives it).
func TestNilContextRefused(t *testing.T) {
	ex, _, _ := newServerExec(t)
	var nilCtx context.Context
	check := func(what string, f func() error) {
		t.Helper()
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			err = f()
		}()
		if !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("%s with a nil context = %v, want task.ErrInvalidArgument", what, err)
		}
	}
	check("Await", func() error { _, err := executor.Await(nilCtx, ex, task.Value(1)); return err })
	check("AwaitAcrossExpiry", func() error { _, err := executor.AwaitAcrossExpiry(nilCtx, ex, task.Value(1)); return err })
	check("Get", func() error { _, err := ex.Get(nilCtx, "/"); return err })
	check("Run", func() error { return ex.Run(nilCtx) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ex.Run(ctx) }()
	if v, err := executor.Await(context.Background(), ex, task.Value(7)); v != 7 || err != nil {
		t.Errorf("Await after Run(nil) = (%d, %v), want (7, <nil>)", v, err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

package blocking_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

// A nil ctx is bad input, refused with executor.ErrNilContext, never a
// panic: Take and Pending.Wait submit nothing, and the give-backs, for
// which a nil ctx is one that has ended, start what they give up all the
// same (Give's t, GiveThenWait's giveUp), in the background.
func TestNilContext(t *testing.T) {
	ex := stepped(t)
	ran := 0
	count := task.Func(func(*task.Scope) (int, error) { ran++; return 1, nil })
	var nilCtx context.Context
	if _, err := blocking.Take(nilCtx, "test op", ex, count, nil, nil); !errors.Is(err, executor.ErrNilContext) {
		t.Fatalf("Take with a nil ctx = %v", err)
	}
	ex.RunUntilIdle()
	if ran != 0 {
		t.Fatalf("Take with a nil ctx ran its task %d times", ran)
	}
	var p blocking.Pending
	if _, err := blocking.Give(nilCtx, "test op", ex, &p, count); !errors.Is(err, executor.ErrNilContext) {
		t.Fatalf("Give with a nil ctx = %v", err)
	}
	if err := p.Wait(nilCtx, "test op"); !errors.Is(err, executor.ErrNilContext) {
		t.Fatalf("Pending.Wait with a nil ctx = %v", err)
	}
	ex.RunUntilIdle()
	if ran != 1 {
		t.Fatalf("Give with a nil ctx ran its give-back %d times", ran)
	}
	if err := p.Wait(context.Background(), "test op"); err != nil {
		t.Fatalf("Pending.Wait once the give-back ended = %v", err)
	}
	gaveUp := 0
	giveUp := task.Func(func(*task.Scope) (task.Unit, error) { gaveUp++; return task.Unit{}, nil })
	if _, err := blocking.GiveThenWait(nilCtx, "test op", ex, &p, count, giveUp); !errors.Is(err, executor.ErrNilContext) {
		t.Fatalf("GiveThenWait with a nil ctx = %v", err)
	}
	ex.RunUntilIdle()
	if gaveUp != 1 || ran != 1 {
		t.Fatalf("GiveThenWait with a nil ctx: giveUp ran %d times, t %d (want 1, 0 more)", gaveUp, ran-1)
	}
	if err := blocking.CtxErr(nilCtx, ""); !errors.Is(err, executor.ErrNilContext) {
		t.Fatalf("CtxErr(nil) = %v", err)
	}
}

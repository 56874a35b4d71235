package lock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// A Held is released through the Client that took it: another Client on
// the same executor refuses it (task.ErrInvalidArgument, nothing sent),
// since the delete would be counted in that Client's background deletes
// and the taking Client's next Acquire would not wait for it. Released
// through its own Client, the next Acquire there takes the lock again.
func TestReleaseThroughAnotherClientIsRefused(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = ex.Run(ctx) }()
	defer func() { cancel(); <-ran }()
	a, _ := lock.NewClient(ex, "/other-client")
	b, _ := lock.NewClient(ex, "/other-client")
	h, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx, h); !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("Release through another Client = %v, want task.ErrInvalidArgument", err)
	}
	if !h.IsHeld() {
		t.Fatal("the refused Release released the lock")
	}
	if err := a.Release(ctx, h); err != nil {
		t.Fatal(err)
	}
	h2, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, h2); err != nil {
		t.Fatal(err)
	}
}

package recipes_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/task"
)

// A blocking call whose context ends names what was waiting: the recipe,
// its path and the call, and still matches the deadline under errors.Is.
func TestDeadlineErrorsNameTheWait(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var exs []*executor.Executor
	for range 2 {
		ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{})})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); ex.Run(ctx) }()
		defer func() { ex.Close(); <-done }()
		exs = append(exs, ex)
	}
	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 50*time.Millisecond) }

	l0, _ := lock.NewClient(exs[0], "/names/lock")
	l1, _ := lock.NewClient(exs[1], "/names/lock")
	held, err := l0.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l0.Release(ctx, held)
	s0, _ := semaphore.NewClient(exs[0], "/names/sem", 1)
	s1, _ := semaphore.NewClient(exs[1], "/names/sem", 1)
	lease, err := s0.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s0.Release(ctx, lease)
	q, _ := queue.NewClient(exs[1], "/names/queue")

	for _, c := range []struct {
		want string
		call func(context.Context) error
	}{
		{"lock /names/lock: acquire: deadline exceeded", func(ctx context.Context) error { _, err := l1.Acquire(ctx); return err }},
		{"semaphore /names/sem: acquire: deadline exceeded", func(ctx context.Context) error { _, err := s1.Acquire(ctx); return err }},
		{"queue /names/queue: take: deadline exceeded", func(ctx context.Context) error { _, err := q.Take(ctx); return err }},
	} {
		cctx, ccancel := short()
		err := c.call(cctx)
		ccancel()
		if !errors.Is(err, task.ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error saying %q", err, c.want)
		}
	}
}

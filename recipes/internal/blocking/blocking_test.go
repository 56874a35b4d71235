package blocking_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// running returns an executor run by a goroutine until the test ends.
func running(t *testing.T) *executor.Executor {
	t.Helper()
	ex, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return ex
}

func TestTakeWon(t *testing.T) {
	ex := running(t)
	var won, undone int
	v, err := blocking.Take(context.Background(), ex, task.Value(7), func(int) { won++ }, func(int) { undone++ })
	if v != 7 || err != nil || won != 1 || undone != 0 {
		t.Fatalf("Take = %d, %v; won %d, undone %d", v, err, won, undone)
	}
	// A failure is returned as is; neither callback runs.
	boom := errors.New("boom")
	if _, err := blocking.Take(context.Background(), ex, task.Fail[int](boom), func(int) { won++ }, func(int) { undone++ }); !errors.Is(err, boom) || won != 1 || undone != 0 {
		t.Fatalf("failing task: %v; won %d, undone %d", err, won, undone)
	}
}

// A context that has ended already submits nothing; one that ends while
// the task waits cancels it and returns the context's error.
func TestTakeContextEnds(t *testing.T) {
	ex := running(t)
	ran := false
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := blocking.Take(ended, ex, task.Func(func(*task.Scope) (int, error) { ran = true; return 1, nil }), nil, nil); !errors.Is(err, context.Canceled) || !errors.Is(err, task.ErrCanceled) {
		t.Fatalf("ended ctx: %v", err)
	}
	forever := task.Task[int](func(s *task.Scope, k task.Cont[int]) {
		task.Suspend(s, k, func(task.Cont[int]) func() { return nil })
	})
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	go func() {
		<-started
		cancel()
	}()
	undone := 0
	_, err := blocking.Take(ctx, ex, task.Task[int](func(s *task.Scope, k task.Cont[int]) { close(started); forever(s, k) }), nil, func(int) { undone++ })
	if !errors.Is(err, task.ErrCanceled) || undone != 0 {
		t.Fatalf("ctx ended while waiting: %v, undone %d", err, undone)
	}
	dl, stop := context.WithTimeout(context.Background(), 0)
	defer stop()
	if _, err := blocking.Take(dl, ex, forever, nil, nil); !errors.Is(err, task.ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	if ran {
		t.Fatal("a task was run for a context that had ended")
	}
}

// Whatever the race between the task's success and the context's end,
// what the task took is either returned (won) or undone: never both,
// never neither.
func TestTakeNeverKeepsWhatItDoesNotReturn(t *testing.T) {
	ex := running(t)
	var wonN, undoneN atomic.Int64
	for range 300 {
		ctx, cancel := context.WithCancel(context.Background())
		var won, undone int
		v, err := blocking.Take(ctx, ex, task.Func(func(*task.Scope) (int, error) { cancel(); return 1, nil }),
			func(int) { won++ }, func(int) { undone++ })
		cancel()
		switch {
		case err == nil && v == 1 && won == 1 && undone == 0:
			wonN.Add(1)
		case errors.Is(err, task.ErrCanceled) && won == 0 && undone == 1:
			undoneN.Add(1)
		default:
			t.Fatalf("Take = %d, %v with won %d, undone %d", v, err, won, undone)
		}
	}
	t.Logf("returned %d, undone %d", wonN.Load(), undoneN.Load())
}

// On an executor's goroutine Take refuses at once instead of waiting
// forever.
func TestTakeOnExecutorRefused(t *testing.T) {
	ex := running(t)
	inner := running(t)
	_, err := executor.Await(context.Background(), ex, task.Func(func(*task.Scope) (int, error) {
		return blocking.Take(context.Background(), inner, task.Value(1), nil, nil)
	}))
	if !errors.Is(err, executor.ErrOnExecutor) {
		t.Fatalf("Take in a job = %v, want ErrOnExecutor", err)
	}
}

func TestDoOwner(t *testing.T) {
	ex, other := running(t), running(t)
	notOurs := errors.New("not ours")
	calls := 0
	mk := func() task.Task[int] { calls++; return task.Value(3) }
	for name, owner := range map[string]*executor.Executor{"no owner": nil, "another executor": other} {
		if _, err := blocking.Do(context.Background(), ex, owner, notOurs, mk); !errors.Is(err, notOurs) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if calls != 0 {
		t.Fatalf("a refused handle's task was made %d times", calls)
	}
	if v, err := blocking.Do(context.Background(), ex, ex, notOurs, mk); v != 3 || err != nil {
		t.Fatalf("owner's Do = %d, %v", v, err)
	}
}

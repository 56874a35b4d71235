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
	v, err := blocking.Take(context.Background(), "test op", ex, task.Value(7), func(int) { won++ }, func(int) { undone++ })
	if v != 7 || err != nil || won != 1 || undone != 0 {
		t.Fatalf("Take = %d, %v; won %d, undone %d", v, err, won, undone)
	}
	// A failure is returned as is; neither callback runs.
	boom := errors.New("boom")
	if _, err := blocking.Take(context.Background(), "test op", ex, task.Fail[int](boom), func(int) { won++ }, func(int) { undone++ }); !errors.Is(err, boom) || won != 1 || undone != 0 {
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
	if _, err := blocking.Take(ended, "test op", ex, task.Func(func(*task.Scope) (int, error) { ran = true; return 1, nil }), nil, nil); !errors.Is(err, context.Canceled) || !errors.Is(err, task.ErrCanceled) {
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
	_, err := blocking.Take(ctx, "test op", ex, task.Task[int](func(s *task.Scope, k task.Cont[int]) { close(started); forever(s, k) }), nil, func(int) { undone++ })
	if !errors.Is(err, task.ErrCanceled) || undone != 0 {
		t.Fatalf("ctx ended while waiting: %v, undone %d", err, undone)
	}
	dl, stop := context.WithTimeout(context.Background(), 0)
	defer stop()
	if _, err := blocking.Take(dl, "test op", ex, forever, nil, nil); !errors.Is(err, task.ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
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
		v, err := blocking.Take(ctx, "test op", ex, task.Func(func(*task.Scope) (int, error) { cancel(); return 1, nil }),
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
		return blocking.Take(context.Background(), "test op", inner, task.Value(1), nil, nil)
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
		if _, err := blocking.Do(context.Background(), "test op", ex, owner, notOurs, mk); !errors.Is(err, notOurs) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if calls != 0 {
		t.Fatalf("a refused handle's task was made %d times", calls)
	}
	if v, err := blocking.Do(context.Background(), "test op", ex, ex, notOurs, mk); v != 3 || err != nil {
		t.Fatalf("owner's Do = %d, %v", v, err)
	}
}

// stepped returns an executor nobody runs: the test steps it.
func stepped(t *testing.T) *executor.Executor {
	t.Helper()
	ex, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Shutdown(); ex.RunUntilIdle() })
	return ex
}

// Give submits its task whatever the context: with one that has ended it
// returns the context's error at once, and the task runs all the same,
// counted in Pending until it ends.
func TestGiveEndedContext(t *testing.T) {
	ex := stepped(t)
	var p blocking.Pending
	ran := 0
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := blocking.Give(ended, "test op", ex, &p, task.Func(func(*task.Scope) (int, error) { ran++; return 1, nil })); !errors.Is(err, context.Canceled) {
		t.Fatalf("Give with an ended context = %v", err)
	}
	dl, stop := context.WithTimeout(context.Background(), 0)
	defer stop()
	if err := p.Wait(dl, "test op"); !errors.Is(err, task.ErrDeadlineExceeded) {
		t.Fatalf("Pending.Wait while the give-back is queued = %v", err)
	}
	ex.RunUntilIdle()
	if ran != 1 {
		t.Fatalf("the give-back ran %d times", ran)
	}
	if err := p.Wait(dl, "test op"); err != nil {
		t.Fatalf("Pending.Wait after the give-back = %v", err)
	}
	var none *blocking.Pending
	if err := none.Wait(dl, "test op"); err != nil {
		t.Fatal(err)
	}
}

// Give returns the task's outcome when it ends first, and is not
// canceled by a context that ends after it started.
func TestGiveOutcome(t *testing.T) {
	ex := running(t)
	boom := errors.New("boom")
	if v, err := blocking.Give(context.Background(), "test op", ex, nil, task.Value(4)); v != 4 || err != nil {
		t.Fatalf("Give = %d, %v", v, err)
	}
	if _, err := blocking.Give(context.Background(), "test op", ex, nil, task.Fail[int](boom)); !errors.Is(err, boom) {
		t.Fatalf("Give of a failing task = %v", err)
	}
	// The task waits until the caller's context has ended: it is not
	// canceled, and ends on its own.
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	outcome := make(chan error, 1)
	slow := task.Task[int](func(s *task.Scope, k task.Cont[int]) {
		cancel()
		go func() {
			<-release
			executor.Submit(ex, task.Func(func(*task.Scope) (int, error) {
				err := s.Err()
				outcome <- err
				k(1, err)
				return 0, nil
			}), nil)
		}()
	})
	if _, err := blocking.Give(ctx, "test op", ex, nil, slow); !errors.Is(err, task.ErrCanceled) {
		t.Fatalf("Give whose context ends = %v", err)
	}
	close(release)
	if err := <-outcome; err != nil {
		t.Fatalf("the give-back was canceled with its caller's context: %v", err)
	}
}

// On an executor's goroutine Give still submits its task, and returns
// ErrOnExecutor without waiting.
func TestGiveOnExecutor(t *testing.T) {
	ex := running(t)
	ran := make(chan struct{})
	_, err := executor.Await(context.Background(), ex, task.Func(func(*task.Scope) (int, error) {
		return blocking.Give(context.Background(), "test op", ex, nil, task.Func(func(*task.Scope) (int, error) { close(ran); return 0, nil }))
	}))
	if !errors.Is(err, executor.ErrOnExecutor) {
		t.Fatalf("Give in a job = %v", err)
	}
	<-ran
}

// GiveThenWait: a flow canceled before it started gives up with giveUp;
// one canceled while it waits gives up in its own cleanup (not giveUp).
func TestGiveThenWait(t *testing.T) {
	ex := stepped(t)
	gaveUp := 0
	giveUp := task.Func(func(*task.Scope) (task.Unit, error) { gaveUp++; return task.Unit{}, nil })
	cleanedUp := 0
	wait := task.Task[int](func(s *task.Scope, k task.Cont[int]) {
		s.Defer(task.Func(func(*task.Scope) (task.Unit, error) { cleanedUp++; return task.Unit{}, nil }))
		task.Suspend(s, k, func(task.Cont[int]) func() { return nil })
	})
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := blocking.GiveThenWait(ended, "test op", ex, nil, wait, giveUp); !errors.Is(err, context.Canceled) {
		t.Fatalf("GiveThenWait with an ended context = %v", err)
	}
	ex.RunUntilIdle()
	if gaveUp != 1 || cleanedUp != 0 {
		t.Fatalf("canceled in the queue: giveUp ran %d times, the cleanup %d", gaveUp, cleanedUp)
	}

	live := running(t)
	gaveUp, cleanedUp = 0, 0
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	go func() { <-started; cancel() }()
	cleaned := make(chan struct{})
	waiting := task.Task[int](func(s *task.Scope, k task.Cont[int]) {
		s.Defer(task.Func(func(*task.Scope) (task.Unit, error) { close(cleaned); return task.Unit{}, nil }))
		close(started)
		task.Suspend(s, k, func(task.Cont[int]) func() { return nil })
	})
	if _, err := blocking.GiveThenWait(ctx, "test op", live, nil, waiting, giveUp); !errors.Is(err, task.ErrCanceled) {
		t.Fatalf("GiveThenWait whose context ends = %v", err)
	}
	<-cleaned
	if _, err := executor.Await(context.Background(), live, task.Value(0)); err != nil { // giveUp would have run before
		t.Fatal(err)
	}
	if gaveUp != 0 {
		t.Fatal("giveUp ran for a flow that had started")
	}
}

// After the executor has stopped there is nothing left to give up: Give
// returns task.ErrClosed, and its Pending is not left counting.
func TestGiveAfterClose(t *testing.T) {
	ex := stepped(t)
	ex.Shutdown()
	ex.RunUntilIdle()
	var p blocking.Pending
	if _, err := blocking.Give(context.Background(), "test op", ex, &p, task.Value(1)); !errors.Is(err, task.ErrClosed) {
		t.Fatalf("Give after the executor stopped = %v", err)
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Wait(ended, "test op"); err != nil {
		t.Fatalf("Pending after a refused give-back = %v", err)
	}
}

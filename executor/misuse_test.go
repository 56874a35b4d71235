package executor_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

// runInBackground runs ex on a goroutine of its own and returns a stop
// function that closes it and returns what Run returned.
func runInBackground(t *testing.T, ex *executor.Executor) (stop func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- ex.Run(context.Background()) }()
	// Run is in its loop once a flow has gone through it.
	if _, err := executor.Await(context.Background(), ex, task.Value(0)); err != nil {
		t.Fatalf("Await on a running executor: %v", err)
	}
	return func() error { ex.Close(); return <-done }
}

// A second Run while one drives the executor fails at once with
// ErrAlreadyRunning, whatever its context, and the first goes on.
func TestSecondRunRefused(t *testing.T) {
	ex, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	stop := runInBackground(t, ex)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // would shut the executor down if this Run were accepted
	if err := ex.Run(ctx); !errors.Is(err, executor.ErrAlreadyRunning) {
		t.Errorf("second Run = %v, want ErrAlreadyRunning", err)
	}
	if v, err := executor.Await(context.Background(), ex, task.Value(7)); err != nil || v != 7 {
		t.Errorf("after the refused Run, Await = %d, %v: the first Run was disturbed", v, err)
	}
	if err := stop(); err != nil {
		t.Errorf("first Run = %v, want nil after Close", err)
	}
	if err := ex.Run(context.Background()); !errors.Is(err, executor.ErrStopped) {
		t.Errorf("Run after stop = %v, want ErrStopped", err)
	}
}

// awaitInJob runs a flow whose body calls block, on the executor, and
// returns block's error. guard bounds how long the old behavior (blocking
// the executor) may last, so that the test fails instead of hanging.
func awaitInJob(block func(ctx context.Context) error) task.Task[task.Unit] {
	return task.Func(func(*task.Scope) (task.Unit, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return task.Unit{}, block(ctx)
	})
}

var blockingCalls = []struct {
	name  string
	block func(ctx context.Context, ex *executor.Executor) error
}{
	{"Await", func(ctx context.Context, ex *executor.Executor) error {
		_, err := executor.Await(ctx, ex, task.Value(1))
		return err
	}},
	{"AwaitAcrossExpiry", func(ctx context.Context, ex *executor.Executor) error {
		_, err := executor.AwaitAcrossExpiry(ctx, ex, task.Value(1))
		return err
	}},
	{"Run", func(ctx context.Context, ex *executor.Executor) error {
		return ex.Run(ctx)
	}},
	{"CanBlock", func(context.Context, *executor.Executor) error {
		return executor.CanBlock()
	}},
}

// CanBlock is nil off the executor goroutine.
func TestCanBlockOffExecutor(t *testing.T) {
	if err := executor.CanBlock(); err != nil {
		t.Fatalf("CanBlock on a test goroutine = %v", err)
	}
}

// A blocking call made inside a job, on an executor driven by Step (as a
// simulation drives it) or by Run, fails at once with ErrOnExecutor.
func TestBlockingCallOnExecutorRefused(t *testing.T) {
	for _, bc := range blockingCalls {
		t.Run(bc.name+"/stepped", func(t *testing.T) {
			r := rig.New(t)
			o := rig.Submit(r, awaitInJob(func(ctx context.Context) error { return bc.block(ctx, r.Ex) }))
			r.Idle()
			o.Want(t, 1, executor.ErrOnExecutor)
		})
		t.Run(bc.name+"/run", func(t *testing.T) {
			ex, err := executor.New(executor.Config{})
			if err != nil {
				t.Fatal(err)
			}
			stop := runInBackground(t, ex)
			_, err = executor.Await(context.Background(), ex, awaitInJob(func(ctx context.Context) error { return bc.block(ctx, ex) }))
			if !errors.Is(err, executor.ErrOnExecutor) {
				t.Errorf("blocking call in a job = %v, want ErrOnExecutor", err)
			}
			if err := stop(); err != nil {
				t.Errorf("Run = %v", err)
			}
		})
		// The job's frame is far down a deep stack: the check walks it
		// all, not only its top frames.
		t.Run(bc.name+"/deep stack", func(t *testing.T) {
			r := rig.New(t)
			var deep func(ctx context.Context, n int) error
			deep = func(ctx context.Context, n int) error {
				if n == 0 {
					return bc.block(ctx, r.Ex)
				}
				return deep(ctx, n-1)
			}
			o := rig.Submit(r, awaitInJob(func(ctx context.Context) error { return deep(ctx, 200) }))
			r.Idle()
			o.Want(t, 1, executor.ErrOnExecutor)
		})
		// One goroutine drives several executors in a simulation: a job
		// of one blocking on another would stall both.
		t.Run(bc.name+"/other executor", func(t *testing.T) {
			a, b := rig.New(t), rig.New(t)
			o := rig.Submit(a, awaitInJob(func(ctx context.Context) error { return bc.block(ctx, b.Ex) }))
			a.Idle()
			o.Want(t, 1, executor.ErrOnExecutor)
		})
	}
}

// Session callbacks run on the executor goroutine too.
func TestAwaitInSessionCallbackRefused(t *testing.T) {
	r := rig.New(t)
	var got []error
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	executor.Submit(r.Ex, task.Func(func(s *task.Scope) (task.Unit, error) {
		s.Subscribe(func(task.Event) {
			_, err := executor.Await(ctx, r.Ex, task.Value(1))
			got = append(got, err)
		})
		return task.Unit{}, nil
	}), nil)
	r.Idle()
	r.Conn.Suspend()
	r.Idle()
	if len(got) != 1 || !errors.Is(got[0], executor.ErrOnExecutor) {
		t.Fatalf("Await in a session callback = %v, want [ErrOnExecutor]", got)
	}
}

// The goroutine that drives an executor with Step may block on it between
// steps, and other goroutines may while it steps: neither is refused.
func TestAwaitOffExecutorAccepted(t *testing.T) {
	r := rig.New(t)
	res := make(chan error, 1)
	go func() {
		_, err := executor.Await(context.Background(), r.Ex, task.Value(1))
		res <- err
	}()
	for {
		r.Idle()
		select {
		case err := <-res:
			if err != nil {
				t.Fatalf("Await from another goroutine = %v", err)
			}
			goto driver
		default:
			runtime.Gosched()
		}
	}
driver:
	// The driving goroutine itself, outside a step: an ended context
	// returns at once, and nothing refuses it for being the driver.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := executor.Await(ctx, r.Ex, task.Value(1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Await on the driving goroutine between steps = %v, want context.Canceled", err)
	}
}

// Misuse with nil values gives typed errors, not panics.
func TestNilExecutorAndTask(t *testing.T) {
	if _, err := executor.Await(context.Background(), nil, task.Value(1)); !errors.Is(err, executor.ErrNilExecutor) {
		t.Errorf("Await(nil executor) = %v, want ErrNilExecutor", err)
	}
	if _, err := executor.AwaitAcrossExpiry(context.Background(), nil, task.Value(1)); !errors.Is(err, executor.ErrNilExecutor) {
		t.Errorf("AwaitAcrossExpiry(nil executor) = %v, want ErrNilExecutor", err)
	}
	var got error
	f := executor.Submit(nil, task.Value(1), func(_ int, err error) { got = err })
	if !errors.Is(got, executor.ErrNilExecutor) {
		t.Errorf("Submit(nil executor) gave %v, want ErrNilExecutor", got)
	}
	f.Cancel() // does nothing, does not panic
	// A nil task fails at once, with no executor running.
	ex, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Shutdown()
	if _, err := executor.Await(context.Background(), ex, task.Task[int](nil)); !errors.Is(err, task.ErrNilTask) {
		t.Errorf("Await(nil task) = %v, want ErrNilTask", err)
	}
}

// Whatever call runs the job (a single Step, Shutdown's cancellations, a
// Step after an earlier job panicked), a blocking call inside it is
// refused: the check's shortcut for goroutines outside every job never
// lets one inside a job through.
func TestBlockingCallRefusedWhateverTheDriver(t *testing.T) {
	t.Run("Step", func(t *testing.T) {
		r := rig.New(t)
		o := rig.Submit(r, awaitInJob(func(ctx context.Context) error { return blockingCalls[0].block(ctx, r.Ex) }))
		for r.Ex.Step() {
		}
		o.Want(t, 1, executor.ErrOnExecutor)
	})
	t.Run("Shutdown", func(t *testing.T) {
		r := rig.New(t)
		var got []error
		// A flow parked for good: Shutdown's cancellation ends it, and its
		// stop function runs inside that job.
		executor.Submit(r.Ex, func(s *task.Scope, k task.Cont[task.Unit]) {
			task.Suspend(s, k, func(task.Cont[task.Unit]) func() {
				return func() {
					_, err := executor.Await(context.Background(), r.Ex, task.Value(1))
					got = append(got, err)
				}
			})
		}, nil)
		r.Idle()
		r.Ex.Shutdown()
		if len(got) != 1 || !errors.Is(got[0], executor.ErrOnExecutor) {
			t.Fatalf("Await in a callback of Shutdown = %v, want [ErrOnExecutor]", got)
		}
	})
	t.Run("after a panic", func(t *testing.T) {
		r := rig.New(t)
		executor.Submit(r.Ex, task.Func(func(*task.Scope) (task.Unit, error) { panic("step bug") }), nil)
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("the job's panic did not reach the driver")
				}
			}()
			r.Idle()
		}()
		o := rig.Submit(r, awaitInJob(func(ctx context.Context) error { return blockingCalls[0].block(ctx, r.Ex) }))
		r.Idle()
		o.Want(t, 1, executor.ErrOnExecutor)
		// And off every job, the driving goroutine is let through.
		if err := executor.CanBlock(); err != nil {
			t.Fatalf("CanBlock between steps after a panic = %v", err)
		}
	})
}

package executor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// Step and RunUntilIdle from another goroutine while Run drives the
// executor run nothing: Run's goroutine is the executor goroutine, and a
// job run beside it (here, while Run's goroutine is inside a job) would
// run two jobs at once on state made for one.
func TestStepBesideRunRunsNothing(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- ex.Run(ctx) }()
	in, release := make(chan struct{}), make(chan struct{})
	executor.Submit(ex, task.Func(func(*task.Scope) (task.Unit, error) {
		close(in)
		<-release // Run's goroutine stays in this job
		return task.Unit{}, nil
	}), nil)
	<-in
	second := false
	executor.Submit(ex, task.Func(func(*task.Scope) (task.Unit, error) {
		second = true
		return task.Unit{}, nil
	}), nil)
	stepped := ex.Step()
	idle := ex.RunUntilIdle()
	close(release)
	if _, err := executor.Await(ctx, ex, task.Value(1)); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-ran
	if stepped || idle != 0 {
		t.Fatalf("beside Run's goroutine: Step = %v, RunUntilIdle = %d, want false and 0", stepped, idle)
	}
	if !second {
		t.Fatal("the second job never ran")
	}
}

// Run on a nil executor returns ErrNilExecutor, as the other entry points
// refuse one, and Close on it does nothing: no panic.
func TestRunAndCloseOnANilExecutor(t *testing.T) {
	var e *executor.Executor
	if err := e.Run(context.Background()); !errors.Is(err, executor.ErrNilExecutor) {
		t.Fatalf("Run on a nil executor = %v, want ErrNilExecutor", err)
	}
	e.Close()
}

// A Conn serves one executor: a second executor on a Conn another one
// started stops at once, its Run returning the Conn's refusal, instead of
// running on with every operation failing with a bare ErrClosed.
func TestSecondExecutorOnAConnStops(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	conn := srv.Connect(fakezk.ConnConfig{})
	var exs [2]*executor.Executor
	for i := range exs {
		ex, err := executor.New(executor.Config{Conn: conn, Clock: srv.Clock(), OnError: func(error) {}})
		if err != nil {
			t.Fatal(err)
		}
		exs[i] = ex
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan error, 1)
	go func() { first <- exs[0].Run(ctx) }()
	if _, err := executor.Await(ctx, exs[0], task.Exists("/")); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() { second <- exs[1].Run(ctx) }()
	select {
	case err := <-second:
		if err == nil || !strings.Contains(err.Error(), "starting connection") {
			t.Fatalf("second executor's Run = %v, want the connection's refusal", err)
		}
		t.Logf("second executor's Run: %v", err)
	case <-time.After(10 * time.Second): // a bound, not an order
		t.Fatal("the second executor on a started Conn kept running")
	}
	if _, err := executor.Await(ctx, exs[1], task.Exists("/")); !errors.Is(err, task.ErrClosed) {
		t.Fatalf("Await on the stopped second executor = %v, want task.ErrClosed", err)
	}
	cancel()
	<-first
}

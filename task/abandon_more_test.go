package task_test

import (
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// Abandon: "the goroutines of the task.Flow bodies suspended in its flows
// are unwound (their deferred functions run ...)". One body's deferred
// function panics while it is unwound: the panic used to leave Abandon
// with the bodies not yet unwound still alive (their goroutines leaked).
// They are now unwound before the panic goes on up.
func TestAbandonUnwindsEveryBodyWhenADeferredPanics(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	defer srv.Close()
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	started := 0
	sleeper := func(panicky bool) task.Task[int] {
		return task.Flow(func(f *task.F) (int, error) {
			if panicky {
				defer func() { panic("cleanup failed") }()
			}
			started++
			_, err := task.Await(f, c.Sleep(time.Hour))
			return 0, err
		})
	}
	executor.Submit(ex, sleeper(false), nil)
	executor.Submit(ex, sleeper(true), nil) // the most recent: unwound first
	for i := 0; i < 1000 && started < 2; i++ {
		ex.RunUntilIdle()
	}
	if started != 2 || task.LiveBodies(ex) != 2 {
		t.Fatalf("started %d, alive %d", started, task.LiveBodies(ex))
	}
	func() {
		defer func() { t.Logf("Abandon panicked: %v", recover()) }()
		ex.Abandon()
	}()
	if n := task.LiveBodies(ex); n != 0 {
		t.Errorf("after Abandon: %d bodies alive (goroutines leaked)", n)
		ex.Abandon() // a second call unwinds them
	}
}

// After Abandon, Submit from another goroutine used to be accepted (no
// ErrClosed) and its continuation never called; Await with a ctx without
// end blocked forever. Abandon now refuses later work, as Close does.
func TestSubmitAfterAbandonIsRefused(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	defer srv.Close()
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	ex.RunUntilIdle()
	ex.Abandon()
	called := make(chan error, 1)
	go executor.Submit(ex, task.Value(1), func(_ int, err error) { called <- err })
	select {
	case err := <-called:
		t.Logf("continuation: %v", err)
	case <-time.After(2 * time.Second):
		t.Errorf("Submit after Abandon: accepted, continuation never called")
	}
}

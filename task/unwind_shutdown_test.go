package task_test

import (
	"errors"
	"runtime"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// The usual way to stop an executor driven by Step is `defer ex.Shutdown()`
// (or t.Cleanup(ex.Shutdown), as internal/rig does). When a flow body
// panics or calls runtime.Goexit (t.FailNow inside a flow), the driver's
// deferred Shutdown runs while the driver unwinds. The docs:
//
//	executor.Shutdown: "Shutdown stops an executor driven by Step, at
//	once, on the executor goroutine: what Run does when it stops"
//	FLOWS.md: "Executor.Close/Shutdown ends the session's scope: a
//	suspended body's Await returns ErrClosed. After the shutdown's last
//	jobs, any body still alive is unwound ... so no goroutine outlives the
//	executor."
//
// The deferred Shutdown used to stop nothing (runJob's frame, still on
// the unwinding stack, made it take itself for a call from a job): the
// flow in flight never got its outcome and its body's goroutine stayed
// alive. runJob now clears its mark in a deferred call.
func TestDeferredShutdownWhileABodyUnwinds(t *testing.T) {
	for _, how := range []string{"panic", "goexit"} {
		t.Run(how, func(t *testing.T) {
			srv := fakezk.New(fakezk.Config{})
			defer srv.Close()
			conn := srv.Connect(fakezk.ConnConfig{})
			ex, err := executor.New(executor.Config{Conn: conn, OnError: func(error) {}})
			if err != nil {
				t.Fatal(err)
			}
			var aStarted bool
			var aErr error
			aCalls := 0
			executor.Submit(ex, task.Flow(func(f *task.F) (int, error) {
				aStarted = true
				_, err := task.Await(f, c.Sleep(time.Hour)) // wall clock: never, here
				return 1, err
			}), func(_ int, err error) { aCalls++; aErr = err })

			driverDone := make(chan any)
			go func() {
				defer func() { driverDone <- recover() }()
				defer ex.Shutdown() // the usual clean-up of a Step-driven executor
				for i := 0; i < 1000 && !aStarted; i++ {
					ex.RunUntilIdle()
				}
				if !aStarted {
					panic("flow A did not start")
				}
				executor.Submit(ex, task.Flow(func(f *task.F) (int, error) {
					if how == "panic" {
						panic("boom")
					}
					runtime.Goexit() // what t.FailNow does
					return 0, nil
				}), func(int, error) {})
				ex.RunUntilIdle()
			}()
			p := <-driverDone
			t.Logf("driver ended with recover() = %v", p)
			// The driver has ended; its deferred Shutdown has run.
			if aCalls != 1 || !errors.Is(aErr, task.ErrClosed) {
				t.Errorf("after the deferred Shutdown: flow in flight's continuation called %d times (err %v), want once with ErrClosed", aCalls, aErr)
			}
			if n := task.LiveBodies(ex); n != 0 {
				t.Errorf("after the deferred Shutdown: %d flow bodies alive (goroutines leaked)", n)
			}
			ex.Shutdown() // from a clean stack it does shut down (keeps goleak quiet)
			if aCalls == 1 && errors.Is(aErr, task.ErrClosed) {
				t.Logf("a second Shutdown, from a clean stack, delivered ErrClosed")
			}
		})
	}
}

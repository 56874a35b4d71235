package executor_test

import (
	"context"
	"testing"
	"time"
)

// Shutdown called from another goroutine while Run drives the executor.
// executor/doc.go: "Misuse that would hang or corrupt the executor is
// refused at once"; RUNTIME.md: "Misuse that would hang or corrupt the
// executor is refused at once with a sentinel error, not left to a data
// race or a deadlock". Step and RunUntilIdle beside Run are refused (they
// run nothing); Shutdown was not: it ran the shutdown's jobs on the
// calling goroutine while Run's goroutine ran jobs too (a data race under
// -race). It is now Close: Run's goroutine stops the executor, and
// Shutdown returns once it has, no job of the busy flow run after.
func TestShutdownBesideRunIsClose(t *testing.T) {
	ex, _, _ := newServerExec(t)
	b := newBusy(ex)
	b.submit(t, ex, b.reads()) // keeps Run's goroutine in jobs
	runDone := make(chan error, 1)
	go func() { runDone <- ex.Run(context.Background()) }()
	for b.iters.Load() < 100 { // Run is driving (poll on a condition)
		time.Sleep(time.Millisecond)
	}
	ex.Shutdown() // misuse: not on the executor goroutine
	iters := b.iters.Load()
	select {
	case err := <-runDone:
		t.Logf("Run returned %v", err)
	case <-time.After(guard):
		b.giveUp.Store(true)
		t.Errorf("Run still running %s after Shutdown", guard)
		<-runDone
	}
	if after := b.iters.Load() - iters; after > 0 {
		t.Errorf("the busy flow ran %d iterations after Shutdown returned", after)
	}
}

package executor_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/scriptconn"
	"github.com/zkflow/zkflow/task"
)

// startSignalConn is a scriptconn.Conn that says when it is started.
type startSignalConn struct {
	*scriptconn.Conn
	started chan struct{}
}

func (c *startSignalConn) Start(events func(task.Event)) error {
	close(c.started)
	return c.Conn.Start(events)
}

// Shutdown on an executor no Run drives stops it on the calling
// goroutine; a Run called beside it on another goroutine must not drive
// the executor too (RUNTIME.md: misuse is "not left to a data race";
// Run: "Run after the executor stopped returns ErrStopped", and Shutdown
// beside a Run that drives is Close). Shutdown looked at running, found
// no Run, and went on to the shutdown; a Run that began in between
// passed its own look (stopped not yet set), took the executor and
// stepped it (it started the connection) while Shutdown ran the
// shutdown's jobs on the other goroutine. The test holds Shutdown just
// before its shutdown (SetBeforeShutdown) and starts Run there.
func TestRunBesideAShutdownThatBeganDrivesNothing(t *testing.T) {
	conn := &startSignalConn{Conn: scriptconn.New(), started: make(chan struct{})}
	ex, err := executor.New(executor.Config{Conn: conn, Seed: 1, OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runDone := make(chan error, 1)
	var runErr error
	drove := false
	executor.SetBeforeShutdown(ex, func() {
		go func() { runDone <- ex.Run(ctx) }()
		select {
		case runErr = <-runDone:
		case <-conn.started: // Run took the executor: it started the connection
			drove = true
		}
	})
	ex.Shutdown()
	if drove {
		cancel()
		runErr = <-runDone
		t.Errorf("a Run called while Shutdown stopped the executor drove it (started its connection) and returned %v; want ErrStopped at once", runErr)
	} else if !errors.Is(runErr, executor.ErrStopped) {
		t.Errorf("Run beside a Shutdown under way: %v, want ErrStopped", runErr)
	}
}

package main

// The example's wiring, to copy into a program of your own: the -zk flag
// names a real ZooKeeper (zkadapter.Dial) or, left empty, the example
// embeds an in-memory one (fakezk.New, on the wall clock like a real
// server); each process is a session with an executor running its flows
// (executor.New, go ex.Run); a run ends with cleanUp, which deletes its
// nodes (Executor.DeleteAll).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter"
)

func main() {
	// Ctrl-C ends the run's context: the run stops and still deletes its
	// nodes; a second Ctrl-C kills it at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	context.AfterFunc(ctx, stop)
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage is printed
		}
		fmt.Fprintln(os.Stderr, "masterworker:", err)
		os.Exit(1)
	}
}

// process is one process of the example: a session and the executor
// running its flows.
type process struct {
	name string
	ex   *executor.Executor
	stop func() // stops the executor, which closes the session: as if the process died
}

// start opens a session on the embedded server srv or, when srv is nil,
// on the servers -zk names (host:port[,host:port...][/root]), and runs
// an executor on it until stop.
func start(ctx context.Context, srv *fakezk.Server, zk, name string) (*process, error) {
	var conn task.Conn
	if srv != nil {
		conn = srv.Connect(fakezk.ConnConfig{Timeout: 10 * time.Second})
	} else {
		// -zk is a connect string, as Curator's and kazoo's:
		// "host:port[,host:port...][/root]". Its root (ZooKeeper's chroot,
		// a node that must exist) is the session's "/": every path is
		// under it.
		servers, root, err := zkadapter.ParseConnectString(zk)
		if err != nil {
			return nil, fmt.Errorf("-zk %q: %w", zk, err)
		}
		// Dial gets a bound of its own: a wrong address fails within seconds,
		// not when the whole run's context ends.
		dctx, dcancel := context.WithTimeout(ctx, 15*time.Second)
		zc, err := zkadapter.Dial(dctx, zkadapter.Config{Servers: servers, Root: root})
		dcancel()
		if err != nil {
			return nil, fmt.Errorf("connecting to %s: %w", zk, err)
		}
		conn = zc
	}
	ex, err := executor.New(executor.Config{Conn: conn, OnError: onBackgroundError})
	if err != nil {
		conn.Close()
		return nil, err
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(context.Background()) }()
	return &process{name, ex, func() { ex.Close(); <-done }}, nil
}

// backgroundErrors counts the errors onBackgroundError logged; the
// example's summary checks that there were none.
var backgroundErrors atomic.Int64

// onBackgroundError receives the errors of flows nobody waits for
// (executor.Config.OnError): a cleanup, or a release given back after its
// caller stopped waiting, that failed for good. The example ends sessions
// on purpose (it closes them and lets them expire), so a flow that failed
// because its session ended (task.ErrClosed, task.ErrSessionExpired) is
// expected; anything else is logged and counted.
func onBackgroundError(err error) {
	if errors.Is(err, task.ErrClosed) || errors.Is(err, task.ErrSessionExpired) {
		return
	}
	backgroundErrors.Add(1)
	slog.Error("background flow failed", "err", err)
}

// cleanupTimeout bounds the clean-up at the end of a run (cleanUp), which
// runs even when the run's context has ended.
const cleanupTimeout = 5 * time.Second

// cleanUp ends a run, on success and on failure alike: it deletes root
// and every node under it on ex's session (Executor.DeleteAll), within
// cleanupTimeout of its own, and says so, so that a run on a real server
// leaves nothing behind. It returns runErr joined with the clean-up's
// error; when both are nil it prints the run's last line, OK. Call it
// once every other session of the run has closed (their ephemeral nodes
// are gone with them), so that no process creates again what it deletes.
func cleanUp(ctx context.Context, ex *executor.Executor, root string, runErr error, out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	n, err := ex.DeleteAll(ctx, root)
	switch {
	case err != nil:
		fmt.Fprintf(out, "clean-up FAILED: %v (%d nodes deleted, the rest left under %s)\n", err, n, root)
		return errors.Join(runErr, fmt.Errorf("clean-up of %s: %w", root, err))
	case n > 0:
		fmt.Fprintf(out, "clean-up: deleted %s and the %d nodes under it\n", root, n-1)
	}
	if runErr == nil {
		fmt.Fprintln(out, "OK")
	}
	return runErr
}

package main

// The example's wiring, to copy into a program of your own: the -zk flag
// names a real ZooKeeper (zkadapter.Dial) or, left empty, the example
// embeds an in-memory one (fakezk.New, on the wall clock like a real
// server); each process is a session with an executor running its flows
// (executor.New, go ex.Run).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage is printed
		}
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// process is one process of the example: a session and the executor
// running its flows.
type process struct {
	name string
	conn task.Conn // a *fakezk.Conn on the embedded server, for its faults
	ex   *executor.Executor
	stop func() // stops the executor, which closes the session: as if the process died
}

// start opens a session on the embedded server srv or, when srv is nil,
// on the servers -zk names (host:port,host:port...), and runs an executor
// on it until stop.
func start(ctx context.Context, srv *fakezk.Server, servers, name string) (*process, error) {
	var conn task.Conn
	if srv != nil {
		conn = srv.Connect(fakezk.ConnConfig{Timeout: 10 * time.Second})
	} else {
		// Dial gets a bound of its own: a wrong address fails within seconds,
		// not when the whole run's context ends.
		dctx, dcancel := context.WithTimeout(ctx, 15*time.Second)
		zc, err := zkadapter.Dial(dctx, zkadapter.Config{Servers: strings.Split(servers, ",")})
		dcancel()
		if err != nil {
			return nil, fmt.Errorf("connecting to %s: %w", servers, err)
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
	return &process{name, conn, ex, func() { ex.Close(); <-done }}, nil
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

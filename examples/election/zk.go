package main

// The example's wiring, to copy into a program of your own: the -zk flag
// names a real ZooKeeper (zkadapter.Dial) or, left empty, the example
// embeds an in-memory one (fakezk.New, on the wall clock like a real
// server); each candidate is a session with an executor running its flows
// (executor.New, go ex.Run).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
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
		fmt.Fprintln(os.Stderr, "election:", err)
		os.Exit(1)
	}
}

// start opens a session on the embedded server srv or, when srv is nil,
// on the servers -zk names (host:port,host:port...), and runs an executor
// on it until stop, which closes the session. onError receives the errors
// of the flows nobody waits for (a resign's cleanup cut short, ...).
func start(ctx context.Context, srv *fakezk.Server, servers string, onError func(error)) (ex *executor.Executor, stop func(), err error) {
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
			return nil, nil, fmt.Errorf("connecting to %s: %w", servers, err)
		}
		conn = zc
	}
	ex, err = executor.New(executor.Config{Conn: conn, OnError: onError})
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(context.Background()) }()
	return ex, func() { ex.Close(); <-done }, nil
}

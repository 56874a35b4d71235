package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter"
)

// countConn counts the requests a client sends: each Do is one round trip
// to the server (a multi is one).
type countConn struct {
	task.Conn
	n *atomic.Int64
}

func (c countConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.n.Add(1)
	c.Conn.Do(req, done, watch)
}

// clients are the library's clients of one run: each its own session and
// executor, running on a goroutine of its own until close.
type clients struct {
	Execs    []*executor.Executor
	Requests atomic.Int64
	done     []chan struct{}
}

// dialClients connects n clients to addr.
func dialClients(ctx context.Context, addr string, n int, sessionTimeout time.Duration) (*clients, error) {
	cs := &clients{}
	for range n {
		conn, err := zkadapter.Dial(ctx, zkadapter.Config{Servers: []string{addr}, SessionTimeout: sessionTimeout})
		if err != nil {
			cs.close()
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		ex, err := executor.New(executor.Config{Conn: countConn{conn, &cs.Requests}, OnError: func(error) {}})
		if err != nil {
			conn.Close()
			cs.close()
			return nil, err
		}
		done := make(chan struct{})
		go func() { defer close(done); _ = ex.Run(context.Background()) }()
		cs.Execs = append(cs.Execs, ex)
		cs.done = append(cs.done, done)
	}
	return cs, nil
}

// close stops every executor (closing its connection) and waits for them.
func (cs *clients) close() {
	for _, ex := range cs.Execs {
		ex.Close()
	}
	for _, d := range cs.done {
		<-d
	}
}

// ensurePath creates path and its ancestors, persistent and empty, if
// missing.
func ensurePath(ctx context.Context, ex *executor.Executor, path string) error {
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		_, err := executor.Await(ctx, ex, task.Create(path[:i], nil, task.Persistent))
		if err != nil && !errors.Is(err, task.ErrNodeExists) {
			return err
		}
	}
	return nil
}

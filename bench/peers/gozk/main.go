// Command gozk is the benchmark harness's plain go-zookeeper peer: the same
// scenarios as the library's, written the way a user of
// github.com/go-zookeeper/zk would write them. lock: zk.Lock's Lock and
// Unlock; cas: get then set with the version read, again on ErrBadVersion;
// pipeline: --outstanding goroutines reading one node over one session
// (go-zookeeper pipelines concurrent calls on a connection); get and set:
// the same with a get, or a set of 16 bytes, of one node by --outstanding
// goroutines (1 or more) on one session (the harness's -wire comparison
// of servers). Otherwise each client has its own session. It prints one result line (internal/peers.Format).
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkflow/zkflow/internal/peers"
)

func main() {
	p, err := peers.ParseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "gozk:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := run(ctx, p)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gozk:", err)
		os.Exit(1)
	}
	fmt.Println(peers.Format(r))
}

func run(ctx context.Context, p peers.Params) (peers.Result, error) {
	sessions := p.Clients
	if p.Scenario == "pipeline" || p.Scenario == "get" || p.Scenario == "set" {
		sessions = 1
	}
	conns := make([]*zk.Conn, sessions)
	for i := range conns {
		c, err := dial(ctx, p)
		if err != nil {
			return peers.Result{}, err
		}
		defer c.Close()
		conns[i] = c
	}
	if err := ensure(conns[0], p.Path); err != nil {
		return peers.Result{}, err
	}
	load := peers.Load{Workers: p.Clients, Warmup: p.Warmup, Duration: p.Duration, Ops: p.Ops}
	switch p.Scenario {
	case "lock":
		locks := make([]*zk.Lock, p.Clients)
		for i := range locks {
			locks[i] = zk.NewLock(conns[i], p.Path, zk.WorldACL(zk.PermAll))
		}
		load.Op = func(_ context.Context, w int) error {
			if err := locks[w].Lock(); err != nil {
				return err
			}
			return locks[w].Unlock()
		}
	case "cas":
		load.Op = func(_ context.Context, w int) error { return cas(conns[w], p.Path) }
	case "pipeline", "get":
		load.Workers = p.Outstanding
		load.Op = func(_ context.Context, _ int) error {
			_, _, err := conns[0].Get(p.Path)
			return err
		}
	case "set":
		data := []byte("zkbench-value-16")
		load.Workers = p.Outstanding
		load.Op = func(_ context.Context, _ int) error {
			_, err := conns[0].Set(p.Path, data, -1)
			return err
		}
	default:
		return peers.Result{}, fmt.Errorf("unknown scenario %q", p.Scenario)
	}
	r, err := peers.Drive(ctx, load)
	r.Impl, r.Scenario, r.Clients = string(peers.GoZK), p.Scenario, p.Clients
	return r, err
}

// cas adds one to the 8-byte big-endian counter at path.
func cas(c *zk.Conn, path string) error {
	for {
		data, st, err := c.Get(path)
		if err != nil {
			return err
		}
		var v uint64
		if len(data) >= 8 {
			v = binary.BigEndian.Uint64(data)
		}
		_, err = c.Set(path, binary.BigEndian.AppendUint64(nil, v+1), st.Version)
		if errors.Is(err, zk.ErrBadVersion) {
			continue
		}
		return err
	}
}

// dial connects and waits for the session.
func dial(ctx context.Context, p peers.Params) (*zk.Conn, error) {
	c, events, err := zk.Connect([]string{p.Server}, p.SessionTimeout, zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(p.SessionTimeout)
	defer t.Stop()
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				go func() {
					for range events {
					}
				}()
				return c, nil
			}
		case <-t.C:
			c.Close()
			return nil, fmt.Errorf("no session with %s within %v", p.Server, p.SessionTimeout)
		case <-ctx.Done():
			c.Close()
			return nil, ctx.Err()
		}
	}
}

// ensure creates path and its ancestors (persistent, empty) if missing.
func ensure(c *zk.Conn, path string) error {
	cur := ""
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		cur += "/" + part
		if _, err := c.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", cur, err)
		}
	}
	return nil
}

package main

// This file is the example's wiring, the part to copy into a program of
// your own. The -zk flag picks the ZooKeeper: a real server or ensemble
// (zkadapter.Dial), or, when empty, an in-memory one embedded in the
// process (fakezk.New, seeded by -seed, on the wall clock like a real
// server). Each process of the example is a Client: a session of its own
// and an executor running the session's flows on a goroutine of its own
// (executor.New, go ex.Run(ctx)).

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter"
)

// Main calls run with the command line and standard output, and exits 1,
// naming the example, if run fails.
func Main(name string, run func(ctx context.Context, args []string, out io.Writer) error) {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// Target is where the example's sessions go.
type Target struct {
	Servers        string        // -zk: host:port[,host:port...]; empty for the embedded server
	Seed           uint64        // -seed: the embedded server's seed
	SessionTimeout time.Duration // each session's timeout; 0 means 10s

	srv  *fakezk.Server
	root string

	mu      sync.Mutex
	seq     uint64
	clients []*Client
}

// FlagSet returns the example's flag set with -zk and -seed registered;
// it prints usage and errors to out and returns them from Parse.
func (t *Target) FlagSet(name string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&t.Servers, "zk", "", "ZooKeeper servers, host:port[,host:port...]; empty runs on an embedded fakezk")
	fs.Uint64Var(&t.Seed, "seed", 1, "seed of the embedded server")
	return fs
}

// Embedded returns the embedded server, starting it on first use, or nil
// when -zk names a real one. A zero-clock fakezk.Config runs on the wall
// clock, and an executor on one of its Conns takes that clock: timed
// faults (Partition, Delay) heal and sessions expire in real time.
func (t *Target) Embedded() *fakezk.Server {
	if t.Servers != "" {
		return nil
	}
	if t.srv == nil {
		t.srv = fakezk.New(fakezk.Config{Seed: t.Seed})
	}
	return t.srv
}

// Describe says where the sessions go.
func (t *Target) Describe() string {
	if t.Servers == "" {
		return fmt.Sprintf("embedded ZooKeeper (fakezk), seed %d", t.Seed)
	}
	return "ZooKeeper at " + t.Servers
}

// Root returns the node under which the example keeps its nodes: /name on
// the embedded server, /name-<random> on a real one, so that runs on a
// shared server do not mix.
func (t *Target) Root(name string) string {
	if t.root == "" {
		t.root = "/" + name
		if t.Servers != "" {
			t.root = fmt.Sprintf("/%s-%016x", name, rand.Uint64())
		}
	}
	return t.root
}

// Connect opens a new session: a Conn on the embedded server, or a dial
// of the real one bounded by ctx.
func (t *Target) Connect(ctx context.Context) (task.Conn, error) {
	timeout := t.SessionTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if srv := t.Embedded(); srv != nil {
		return srv.Connect(fakezk.ConnConfig{Timeout: timeout}), nil
	}
	c, err := zkadapter.Dial(ctx, zkadapter.Config{Servers: strings.Split(t.Servers, ","), SessionTimeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", t.Servers, err)
	}
	return c, nil
}

// Client is one process of the example: a session and the executor that
// runs its flows on a goroutine of its own.
type Client struct {
	Name string             // names the client in the output
	Conn task.Conn          // the session (on the embedded server, a *fakezk.Conn, maybe wrapped)
	Ex   *executor.Executor // runs the client's flows

	fake *fakezk.Conn
	stop context.CancelFunc
	done chan struct{}
}

// ClientOption adjusts a client before it starts.
type ClientOption func(*clientConfig)

type clientConfig struct {
	exec executor.Config
	wrap func(*fakezk.Conn) task.Conn
}

// IgnoreErrors drops the errors of the client's background flows, for
// clients the example kills on purpose.
func IgnoreErrors() ClientOption {
	return func(c *clientConfig) { c.exec.OnError = func(error) {} }
}

// NewClient opens a session and starts an executor on it, running until
// Kill or Target.Close (ctx bounds only the connection). The executor
// needs no Clock: on the embedded server it takes the server's from the
// Conn, on a real one it uses the wall clock.
func (t *Target) NewClient(ctx context.Context, name string, opts ...ClientOption) (*Client, error) {
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.seq++
	seed := t.Seed*1000 + t.seq // retry jitter, the same on every run of a seed
	t.mu.Unlock()
	cfg := clientConfig{exec: executor.Config{Conn: conn, Seed: seed}}
	for _, o := range opts {
		o(&cfg)
	}
	c := &Client{Name: name, Conn: conn, done: make(chan struct{})}
	if fc, ok := conn.(*fakezk.Conn); ok {
		c.fake = fc
		if cfg.wrap != nil {
			c.Conn = cfg.wrap(fc)
			cfg.exec.Conn = c.Conn
		}
	}
	ex, err := executor.New(cfg.exec)
	if err != nil {
		conn.Close()
		return nil, err
	}
	c.Ex = ex
	runCtx, stop := context.WithCancel(context.Background())
	c.stop = stop
	go func() { defer close(c.done); _ = ex.Run(runCtx) }()
	t.mu.Lock()
	t.clients = append(t.clients, c)
	t.mu.Unlock()
	return c, nil
}

// FakeConn is the client's connection on the embedded server, for fault
// injection (Server.Drop, Expire, Partition); nil on a real server.
func (c *Client) FakeConn() *fakezk.Conn { return c.fake }

// Kill stops the client at once and waits for it: its flows fail with
// task.ErrClosed and its session closes, so its ephemeral nodes go, as if
// the process had died. Killing a client twice is harmless.
func (c *Client) Kill() {
	c.stop()
	<-c.done
}

// Close kills every client still running, the newest first, then closes
// the embedded server, if any. Closing twice is harmless.
func (t *Target) Close() {
	t.mu.Lock()
	clients := t.clients
	t.clients = nil
	t.mu.Unlock()
	for i := len(clients) - 1; i >= 0; i-- {
		clients[i].Kill()
	}
	if t.srv != nil {
		t.srv.Close()
		t.srv = nil
	}
}

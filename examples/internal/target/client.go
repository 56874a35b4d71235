package target

import (
	"context"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// Client is one process of an example: a session on the target and the
// executor running its flows on a goroutine of its own. Await chains on Ex;
// Kill stops it. Target.Close kills every client still running.
type Client struct {
	// Name names the client in the example's output.
	Name string
	// Conn is the session. On the embedded server it is a *fakezk.Conn,
	// possibly wrapped (see WrapConn).
	Conn task.Conn
	// Ex runs the client's flows.
	Ex *executor.Executor

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

// OnError sends the errors of the client's background flows (deferred
// cleanups, forks nobody waits for) to fn instead of the default log.
func OnError(fn func(error)) ClientOption {
	return func(c *clientConfig) { c.exec.OnError = fn }
}

// IgnoreErrors drops the errors of the client's background flows; for
// clients the example kills on purpose.
func IgnoreErrors() ClientOption { return OnError(func(error) {}) }

// WrapConn puts wrap between the executor and an embedded connection, to
// inject faults tied to particular requests. It has no effect on a real
// server.
func WrapConn(wrap func(*fakezk.Conn) task.Conn) ClientOption {
	return func(c *clientConfig) { c.wrap = wrap }
}

// NewClient opens a session on the target and starts an executor on it,
// with the embedded server's clock and a seed derived from -seed. The
// client runs until Kill or Target.Close, not until ctx ends: ctx bounds
// only the connection.
func (t *Target) NewClient(ctx context.Context, name string, opts ...ClientOption) (*Client, error) {
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.seq++
	seed := t.Seed*1000 + t.seq
	t.mu.Unlock()
	cfg := clientConfig{exec: executor.Config{Conn: conn, Seed: seed}}
	for _, o := range opts {
		o(&cfg)
	}
	c := &Client{Name: name, Conn: conn, done: make(chan struct{})}
	if srv := t.Embedded(); srv != nil {
		cfg.exec.Clock = srv.Clock()
		c.fake = conn.(*fakezk.Conn)
		if cfg.wrap != nil {
			c.Conn = cfg.wrap(c.fake)
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

// Killed reports whether the client has stopped.
func (c *Client) Killed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Package target gives every example the same -zk flag: empty runs on an
// embedded fakezk, otherwise the example connects to the real servers
// named, under a root node of its own so runs on a shared server do not mix.
//
// It also holds what every example's processes share: NewClient opens a
// session and runs an executor on it (a Client, killed with Kill, or with
// the rest by Close); FlagSet and Main are the command-line scaffolding.
package target

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter"
)

// Target is where an example's sessions go.
type Target struct {
	// Servers is the -zk flag: host:port[,host:port...], or empty.
	Servers string
	// Seed seeds the embedded server (-seed).
	Seed uint64
	// SessionTimeout is each session's timeout.
	SessionTimeout time.Duration

	srv  *fakezk.Server
	root string

	mu      sync.Mutex
	seq     uint64
	clients []*Client
}

// Register adds -zk and -seed to fs.
func (t *Target) Register(fs *flag.FlagSet) {
	fs.StringVar(&t.Servers, "zk", "", "ZooKeeper servers, host:port[,host:port...]; empty runs on an embedded fakezk")
	fs.Uint64Var(&t.Seed, "seed", 1, "seed of the embedded server")
}

// Embedded returns the embedded server (starting it on first use), or nil
// when the target is a real server.
func (t *Target) Embedded() *fakezk.Server {
	if t.Servers != "" {
		return nil
	}
	if t.srv == nil {
		// On the wall clock, like a real server: sessions of clients that
		// stop talking expire, and the executors' timers and the server's
		// agree.
		t.srv = fakezk.New(fakezk.Config{Seed: t.Seed, Clock: task.RealClock()})
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
// the embedded server, /name-<random> on a real one.
func (t *Target) Root(name string) string {
	if t.root == "" {
		t.root = "/" + name
		if t.Servers != "" {
			t.root = fmt.Sprintf("/%s-%016x", name, rand.Uint64())
		}
	}
	return t.root
}

// Connect opens a new session.
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

// Close kills every client still running (see NewClient), the newest
// first, as deferred Kills would, then closes the
// embedded server, if any. Closing twice is harmless.
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

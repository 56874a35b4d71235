package zkserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkflow/zkflow/internal/netproxy"
)

// Cluster is a standalone server (one Server, ID 0) or an ensemble of
// quorum peers (IDs 1..n), addressed by index: server i is Server(i), for
// i from 0 to Len()-1. Its methods may be called from any goroutine; those
// that wait take a context.
type Cluster struct {
	servers []*Server
	ca      *CA
	opts    Options
	main    string
	root    string

	closeOnce sync.Once
}

// Standalone starts one standalone server, waits until it serves and
// registers t.Cleanup to close it (Close: every process and proxy gone,
// the data removed). It skips or fails t as Require does when ZooKeeper is
// not installed, and fails t when the server does not start; it must be
// called on the test's goroutine. When the test has failed, the cleanup
// logs the tail of each server's log first.
func Standalone(t testing.TB, opts Options) *Cluster {
	t.Helper()
	Require(t)
	c, err := NewStandalone(opts)
	if err != nil {
		t.Fatal(err)
	}
	c.closeWith(t)
	return c
}

// Ensemble starts n quorum peers, waits until every one serves and
// registers t.Cleanup to close them, as Standalone does.
func Ensemble(t testing.TB, n int, opts Options) *Cluster {
	t.Helper()
	Require(t)
	c, err := NewEnsemble(n, opts)
	if err != nil {
		t.Fatal(err)
	}
	c.closeWith(t)
	return c
}

// NewStandalone is Standalone outside a test: it starts one standalone
// server and returns once it serves. The caller must Close it. The error
// wraps ErrUnavailable when ZooKeeper is not installed; on any error
// nothing is left running.
func NewStandalone(opts Options) (*Cluster, error) { return newCluster(0, opts) }

// NewEnsemble is Ensemble outside a test: it starts n quorum peers and
// returns once every one serves. The caller must Close it.
func NewEnsemble(n int, opts Options) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("zkserver: ensemble of %d servers", n)
	}
	return newCluster(n, opts)
}

func (c *Cluster) closeWith(t testing.TB) {
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range c.servers {
				t.Logf("zkserver: log of server %d (%s):\n%s", s.id, s.DirectAddr(), s.LogTail(40))
			}
		}
		c.Close()
	})
}

func tmpRoot() (string, error) {
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	return os.MkdirTemp(base, "zkserver-")
}

// errPortTaken: another process bound a port chosen for the server
// before the server did.
var errPortTaken = errors.New("zkserver: a port chosen for the server was taken by another process")

// newCluster starts n quorum peers, or one standalone server for n == 0,
// on new ports each time another process took one of them first (a few
// times). On error it closes what it started.
func newCluster(n int, opts Options) (*Cluster, error) {
	for range 3 {
		c, err := newClusterOnce(n, opts)
		if !errors.Is(err, errPortTaken) {
			return c, err
		}
	}
	return newClusterOnce(n, opts)
}

func newClusterOnce(n int, opts Options) (_ *Cluster, err error) {
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if err := Available(); err != nil {
		return nil, err
	}
	root, err := tmpRoot()
	if err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts, root: root, main: standaloneMain}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if opts.TLS {
		if c.ca = opts.CA; c.ca == nil {
			if c.ca, err = NewCA(); err != nil {
				return nil, err
			}
		}
	}
	count := n
	if n == 0 {
		count = 1
	} else {
		c.main = quorumMain
	}
	per := 3 // client, peer and election ports, and the secure port with TLS
	if opts.TLS {
		per = 4
	}
	ports, err := pickPorts(per * count)
	if err != nil {
		return nil, err
	}
	for i := range count {
		p := ports[per*i:]
		s := &Server{clientPort: p[0], peerPort: p[1], electPort: p[2]}
		if opts.TLS {
			s.securePort = p[3]
		}
		if n > 0 {
			s.id = i + 1
		}
		s.dir = filepath.Join(root, fmt.Sprintf("server%d", s.id))
		c.servers = append(c.servers, s)
		if opts.Proxied {
			if s.proxy, err = netproxy.New(s.DirectAddr()); err != nil {
				return nil, err
			}
			if opts.TLS {
				if s.secureProxy, err = netproxy.New(s.directSecureAddr()); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, s := range c.servers {
		if err := c.writeConfig(s); err != nil {
			return nil, err
		}
	}
	for _, s := range c.servers {
		if err := s.start(c.main, c.opts); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.StartTimeout)
	defer cancel()
	for i := range c.servers {
		if err := c.WaitServing(ctx, i); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Cluster) writeConfig(s *Server) error {
	data := filepath.Join(s.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	o := c.opts
	lines := []string{
		fmt.Sprintf("tickTime=%d", o.TickTime.Milliseconds()),
		"dataDir=" + data,
		fmt.Sprintf("clientPort=%d", s.clientPort),
		"clientPortAddress=127.0.0.1",
		fmt.Sprintf("minSessionTimeout=%d", o.MinSessionTimeout.Milliseconds()),
		fmt.Sprintf("maxSessionTimeout=%d", o.MaxSessionTimeout.Milliseconds()),
		"forceSync=no",
		"4lw.commands.whitelist=*",
		"admin.enableServer=false",
		"maxClientCnxns=0",
		"autopurge.purgeInterval=0",
	}
	if c.ca != nil {
		if err := c.writeTLSFiles(s); err != nil {
			return err
		}
		lines = append(lines, c.tlsConfigLines(s)...)
	}
	if s.id > 0 {
		lines = append(lines, "initLimit=100", "syncLimit=20")
		for _, p := range c.servers {
			lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", p.id, p.peerPort, p.electPort))
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), fmt.Appendf(nil, "%d\n", s.id), 0o644); err != nil {
			return err
		}
	}
	lines = append(lines, o.Extra...)
	return os.WriteFile(filepath.Join(s.dir, "zoo.cfg"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// Len is the number of servers: 1 for a standalone server, n for an
// ensemble of n.
func (c *Cluster) Len() int { return len(c.servers) }

// Server returns server i, 0 <= i < Len().
func (c *Cluster) Server(i int) *Server { return c.servers[i] }

// CA is the authority that issued the servers' certificates (Options.TLS):
// its ClientConfig and MutualConfig configure clients. Nil without TLS.
func (c *Cluster) CA() *CA { return c.ca }

// Addrs returns the address a client dials for each server, running or
// not, in index order: the proxies' with Options.Proxied (see
// Server.Addr).
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.servers))
	for i, s := range c.servers {
		out[i] = s.Addr()
	}
	return out
}

// ConnectString is Addrs as a ZooKeeper connect string,
// "127.0.0.1:a,127.0.0.1:b,...", for clients that take one
// (zkadapter.ParseConnectString, Apache Curator, kazoo, zkCli.sh).
func (c *Cluster) ConnectString() string { return strings.Join(c.Addrs(), ",") }

// SecureAddrs returns the TLS client addresses of every server (nil
// without Options.TLS).
func (c *Cluster) SecureAddrs() []string {
	if c.ca == nil {
		return nil
	}
	out := make([]string, len(c.servers))
	for i, s := range c.servers {
		out[i] = s.SecureAddr()
	}
	return out
}

// Stop stops server i with SIGTERM (a clean shutdown) and waits for it to
// exit (after 10s, SIGKILL). Its clients see their connections closed; a
// client that dials it meanwhile is refused (through a proxy: accepted,
// then reset).
func (c *Cluster) Stop(i int) { c.servers[i].signal(syscall.SIGTERM, 10*time.Second) }

// Kill kills server i with SIGKILL and waits for it to exit: a crash. The
// data it had written stays (forceSync=no: what the process handed the
// kernel).
func (c *Cluster) Kill(i int) { c.servers[i].signal(syscall.SIGKILL, 10*time.Second) }

// Start starts server i again, on the same ports and data, and returns at
// once; WaitServing waits for it to serve. Starting a running server is an
// error.
func (c *Cluster) Start(i int) error { return c.servers[i].start(c.main, c.opts) }

// Restart starts server i again (Start) and waits until it serves or ctx
// ends. It does not stop it first: Stop or Kill it before.
//
// ZooKeeper 3.8 listens on its client port before it has loaded its data,
// and a client connection that arrives in that window is neither answered
// nor closed (its close fails on the database not yet loaded:
// ZooKeeperServer.removeCnxn), so the client waits out its handshake
// bound (zkadapter: half the session timeout with one server; ZooKeeper's
// Java client: all of it, and the session the server has just loaded
// expires). A test that needs its client to resume its session at once
// holds the client's dials until Restart returns (a Dialer that refuses
// them).
func (c *Cluster) Restart(ctx context.Context, i int) error {
	if err := c.Start(i); err != nil {
		return err
	}
	return c.WaitServing(ctx, i)
}

// Wipe deletes server i's data (its snapshots and transaction logs; an
// ensemble peer keeps its myid). The server must be stopped: started again,
// it comes back empty, as a server that lost its disk.
func (c *Cluster) Wipe(i int) error {
	s := c.servers[i]
	if s.Running() {
		return fmt.Errorf("zkserver: wipe of server %d while it runs", i)
	}
	return os.RemoveAll(filepath.Join(s.dir, "data", "version-2"))
}

// WaitServing polls server i (every 50ms) until it serves or ctx ends;
// with TLS, until a TLS handshake on its secure port succeeds too. It
// fails at once if the process has exited, or if its client port answers
// for another server (its configuration names another data directory):
// another process bound the port first.
func (c *Cluster) WaitServing(ctx context.Context, i int) error {
	s := c.servers[i]
	var last error
	for {
		if !s.Running() {
			tail := s.LogTail(30)
			err := fmt.Errorf("zkserver: server %d (%s) exited while starting:\n%s", s.id, s.DirectAddr(), tail)
			if strings.Contains(tail, "Address already in use") {
				err = fmt.Errorf("%w: %w", errPortTaken, err)
			}
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := s.Mode(pctx)
		if err == nil {
			err = s.ownPort(pctx)
		}
		cancel()
		if errors.Is(err, errPortTaken) {
			return err
		}
		if err == nil {
			if c.ca == nil {
				return nil
			}
			return c.waitTLS(ctx, s)
		}
		last = err
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("zkserver: server %d (%s) not serving: %v (last: %v)\n%s",
				s.id, s.DirectAddr(), ctx.Err(), last, s.LogTail(30))
		case <-t.C:
		}
	}
}

// WaitNotServing polls server i until it stops serving (for a peer that
// lost its quorum) or ctx ends.
func (c *Cluster) WaitNotServing(ctx context.Context, i int) error {
	s := c.servers[i]
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := s.Mode(pctx)
		cancel()
		if err != nil {
			return nil
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("zkserver: server %d (%s) still serving: %v", s.id, s.DirectAddr(), ctx.Err())
		case <-t.C:
		}
	}
}

// Leader returns the index of the ensemble's leader, or -1 (no leader
// now, or a standalone server).
func (c *Cluster) Leader(ctx context.Context) int {
	for i, s := range c.servers {
		if m, err := s.Mode(ctx); err == nil && m == "leader" {
			return i
		}
	}
	return -1
}

// Close closes the proxies (resetting their connections), kills every
// server, waits for the processes to exit and removes the data
// directories. Standalone and Ensemble register it with t.Cleanup; it is
// safe to call more than once.
func (c *Cluster) Close() {
	c.closeOnce.Do(func() {
		for _, s := range c.servers {
			for _, p := range []*netproxy.Proxy{s.proxy, s.secureProxy} {
				if p != nil {
					p.Close()
				}
			}
		}
		for _, s := range c.servers {
			s.signal(syscall.SIGKILL, 10*time.Second)
		}
		if c.root != "" {
			os.RemoveAll(c.root)
		}
	})
}

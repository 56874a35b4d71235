package zkserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Cluster is a standalone server (one Server, ID 0) or an ensemble of
// quorum peers (IDs 1..n).
type Cluster struct {
	Servers []*Server
	// CA issued the servers' TLS certificates (Options.TLS); nil without
	// TLS. Its ClientConfig and MutualConfig configure clients.
	CA *CA

	opts Options
	main string
	root string
}

// Standalone starts one standalone server and waits until it serves. It
// skips or fails t as Require does when ZooKeeper is not installed.
func Standalone(t testing.TB, opts Options) *Cluster {
	t.Helper()
	Require(t)
	c, err := newCluster(t, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Ensemble starts n quorum peers and waits until every one serves.
func Ensemble(t testing.TB, n int, opts Options) *Cluster {
	t.Helper()
	Require(t)
	if n < 1 {
		t.Fatalf("zkserver: ensemble of %d servers", n)
	}
	c, err := newCluster(t, n, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func tmpRoot() (string, error) {
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	return os.MkdirTemp(base, "zkserver-")
}

func newCluster(t testing.TB, n int, opts Options) (*Cluster, error) {
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	root, err := tmpRoot()
	if err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts, root: root, main: standaloneMain}
	if opts.TLS {
		if c.CA = opts.CA; c.CA == nil {
			if c.CA, err = NewCA(); err != nil {
				return nil, err
			}
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range c.Servers {
				t.Logf("zkserver: log of server %d (%s):\n%s", s.ID, s.Addr(), s.LogTail(40))
			}
		}
		c.Close()
	})
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
	ports, err := freePorts(per * count)
	if err != nil {
		return nil, err
	}
	for i := range count {
		p := ports[per*i:]
		s := &Server{ClientPort: p[0], peerPort: p[1], electPort: p[2]}
		if opts.TLS {
			s.SecurePort = p[3]
		}
		if n > 0 {
			s.ID = i + 1
		}
		s.dir = filepath.Join(root, fmt.Sprintf("server%d", s.ID))
		c.Servers = append(c.Servers, s)
	}
	for _, s := range c.Servers {
		if err := c.writeConfig(s); err != nil {
			return nil, err
		}
	}
	for _, s := range c.Servers {
		if err := s.start(c.main, c.opts); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.StartTimeout)
	defer cancel()
	for i := range c.Servers {
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
		fmt.Sprintf("clientPort=%d", s.ClientPort),
		"clientPortAddress=127.0.0.1",
		fmt.Sprintf("minSessionTimeout=%d", o.MinSessionTimeout.Milliseconds()),
		fmt.Sprintf("maxSessionTimeout=%d", o.MaxSessionTimeout.Milliseconds()),
		"forceSync=no",
		"4lw.commands.whitelist=*",
		"admin.enableServer=false",
		"maxClientCnxns=0",
		"autopurge.purgeInterval=0",
	}
	if c.CA != nil {
		if err := c.writeTLSFiles(s); err != nil {
			return err
		}
		lines = append(lines, c.tlsConfigLines(s)...)
	}
	if s.ID > 0 {
		lines = append(lines, "initLimit=100", "syncLimit=20")
		for _, p := range c.Servers {
			lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", p.ID, p.peerPort, p.electPort))
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), fmt.Appendf(nil, "%d\n", s.ID), 0o644); err != nil {
			return err
		}
	}
	lines = append(lines, o.Extra...)
	return os.WriteFile(filepath.Join(s.dir, "zoo.cfg"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// Addrs returns the client addresses of every server, running or not.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		out[i] = s.Addr()
	}
	return out
}

// SecureAddrs returns the TLS client addresses of every server (nil
// without Options.TLS).
func (c *Cluster) SecureAddrs() []string {
	if c.CA == nil {
		return nil
	}
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		out[i] = s.SecureAddr()
	}
	return out
}

// Stop stops server i with SIGTERM (a clean shutdown) and waits for it.
func (c *Cluster) Stop(i int) { c.Servers[i].signal(syscall.SIGTERM, 10*time.Second) }

// Kill kills server i with SIGKILL and waits for it.
func (c *Cluster) Kill(i int) { c.Servers[i].signal(syscall.SIGKILL, 10*time.Second) }

// Start starts server i again, on the same ports and data, and returns at
// once; WaitServing waits for it to serve.
func (c *Cluster) Start(i int) error { return c.Servers[i].start(c.main, c.opts) }

// Restart starts server i again and waits until it serves or ctx ends.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	if err := c.Start(i); err != nil {
		return err
	}
	return c.WaitServing(ctx, i)
}

// WaitServing polls server i (every 50ms) until it serves or ctx ends;
// with TLS, until a TLS handshake on its secure port succeeds too.
func (c *Cluster) WaitServing(ctx context.Context, i int) error {
	s := c.Servers[i]
	var last error
	for {
		if !s.Running() {
			return fmt.Errorf("zkserver: server %d (%s) exited while starting:\n%s", s.ID, s.Addr(), s.LogTail(30))
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := s.Mode(pctx)
		cancel()
		if err == nil {
			if c.CA == nil {
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
				s.ID, s.Addr(), ctx.Err(), last, s.LogTail(30))
		case <-t.C:
		}
	}
}

// WaitNotServing polls server i until it stops serving (for a peer that
// lost its quorum) or ctx ends.
func (c *Cluster) WaitNotServing(ctx context.Context, i int) error {
	s := c.Servers[i]
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
			return fmt.Errorf("zkserver: server %d (%s) still serving: %v", s.ID, s.Addr(), ctx.Err())
		case <-t.C:
		}
	}
}

// Leader returns the index of the ensemble's leader, or -1.
func (c *Cluster) Leader(ctx context.Context) int {
	for i, s := range c.Servers {
		if m, err := s.Mode(ctx); err == nil && m == "leader" {
			return i
		}
	}
	return -1
}

// Close kills every server and removes the data directories. It is called
// by t.Cleanup and safe to call more than once.
func (c *Cluster) Close() {
	for _, s := range c.Servers {
		s.signal(syscall.SIGKILL, 10*time.Second)
	}
	if c.root != "" {
		os.RemoveAll(c.root)
	}
}

// Wipe deletes server i's data (its snapshots and transaction logs; an
// ensemble peer keeps its myid). The server must be stopped: started again,
// it comes back empty, as a server that lost its disk.
func (c *Cluster) Wipe(i int) error {
	s := c.Servers[i]
	if s.Running() {
		return fmt.Errorf("zkserver: wipe of server %d while it runs", i)
	}
	return os.RemoveAll(filepath.Join(s.dir, "data", "version-2"))
}

package zkserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkflow/zkflow/internal/netproxy"
)

// JarDir is where Debian's zookeeper package puts the server jars.
const JarDir = "/usr/share/java"

// jarDir is JarDir, except in this package's tests.
var jarDir = JarDir

// Main classes of the two server kinds.
const (
	standaloneMain = "org.apache.zookeeper.server.ZooKeeperServerMain"
	quorumMain     = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
)

// ErrUnavailable says java or the zookeeper jars are not installed. Its
// message says how to install them.
var ErrUnavailable = errors.New("zkserver: ZooKeeper is not installed (it needs java on PATH and " +
	JarDir + "/zookeeper.jar); on Debian or Ubuntu: `apt-get install default-jdk-headless zookeeper`" +
	" (in zkflow's own tree, `make test` installs them with .ci/install-deps)")

// Options shape the servers. The zero value is a fast test configuration.
type Options struct {
	// TickTime is ZooKeeper's basic time unit (default 100ms). Sessions
	// expire with a granularity of one tick.
	TickTime time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound the negotiated session
	// timeout (defaults 2 and 20 ticks, as ZooKeeper's).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// StartTimeout bounds the wait for a server to serve (default 30s).
	StartTimeout time.Duration
	// Extra lines for zoo.cfg, "key=value". ZooKeeper turns a key it does
	// not know into the system property "zookeeper.<key>", so settings read
	// from other properties need SystemProperties.
	Extra []string
	// SystemProperties are JVM system properties, "key=value", passed as
	// -Dkey=value after the package's own (so they win): for instance
	// znode.container.checkIntervalMs, which the server reads only from
	// the system properties.
	SystemProperties []string
	// Throughput starts the JVM for speed of serving (full JIT) instead of
	// speed of starting (C1 only, serial GC): for benchmarks.
	Throughput bool
	// ExtendedTypes enables TTL nodes (zookeeper.extendedTypesEnabled),
	// which ZooKeeper disables by default (creates then fail with
	// UNIMPLEMENTED).
	ExtendedTypes bool
	// TLS makes every server serve TLS on a second client port too
	// (Server.SecureAddr, Cluster.SecureAddrs), with a certificate for the
	// loopback names issued by CA. It switches the servers to the Netty
	// connection factory (NIO has no TLS), which serves the plaintext port
	// as before.
	TLS bool
	// CA issues the servers' certificates and is their trust store for
	// client certificates; nil means a new one. Either way it is
	// Cluster.CA. Only with TLS.
	CA *CA
	// ClientAuth is the secure port's ssl.clientAuth (default none);
	// ClientAuthNeed makes it mutual TLS. Only with TLS.
	ClientAuth ClientAuth
	// Proxied puts a TCP proxy (on loopback too) in front of every
	// server's client port, and of its secure port with TLS, so that
	// Cluster.Partition can cut a server off from its clients and
	// Cluster.Heal can undo it. Addrs, ConnectString, SecureAddrs and
	// Server.Addr then name the proxies; Server.DirectAddr still names
	// the server itself. A proxy costs a few goroutines per connection and
	// a copy per chunk: leave it off for benchmarks.
	Proxied bool
}

func (o *Options) defaults() {
	if o.TickTime <= 0 {
		o.TickTime = 100 * time.Millisecond
	}
	if o.MinSessionTimeout <= 0 {
		o.MinSessionTimeout = 2 * o.TickTime
	}
	if o.MaxSessionTimeout <= 0 {
		o.MaxSessionTimeout = 20 * o.TickTime
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 30 * time.Second
	}
	if o.ClientAuth == "" {
		o.ClientAuth = ClientAuthNone
	}
}

func (o *Options) validate() error {
	switch o.ClientAuth {
	case ClientAuthNone, ClientAuthWant, ClientAuthNeed:
	default:
		return fmt.Errorf("zkserver: ClientAuth %q is not none, want or need", o.ClientAuth)
	}
	if !o.TLS && (o.CA != nil || o.ClientAuth != ClientAuthNone) {
		return errors.New("zkserver: Options.CA or ClientAuth without TLS")
	}
	return nil
}

// Available reports whether a server can be started: java on PATH and the
// jars in JarDir. The error wraps ErrUnavailable.
func Available() error {
	if _, err := exec.LookPath("java"); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	for _, j := range []string{"zookeeper.jar", "zookeeper-jute.jar"} {
		if _, err := os.Stat(filepath.Join(jarDir, j)); err != nil {
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	return nil
}

// Require skips t when no server can be started (Available fails),
// saying how to install one, or fails it instead when the environment has
// ZK_REQUIRED=1: in CI, where a skipped real-server test would pass
// unnoticed. Standalone and Ensemble call it first.
func Require(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("ZK_REQUIRED") == "1" {
			t.Fatalf("ZK_REQUIRED=1 but %v", err)
			return
		}
		t.Skipf("skipping real-server test (ZK_REQUIRED=1 would fail it): %v", err)
	}
}

// classpath is zookeeper.jar (its manifest's Class-Path names netty, slf4j,
// metrics, snappy, commons-* and zookeeper-jute) plus, when present,
// slf4j-simple, so the server's log reaches its log file instead of a
// no-op, and netty-codec, which the manifest leaves out and the Netty
// connection factory's TLS handler needs (its base class,
// ByteToMessageDecoder, is there).
func classpath() string {
	cp := []string{filepath.Join(jarDir, "zookeeper.jar"), filepath.Join(jarDir, "zookeeper-jute.jar")}
	for _, j := range []string{"slf4j-simple.jar", "netty-codec.jar"} {
		if _, err := os.Stat(filepath.Join(jarDir, j)); err == nil {
			cp = append(cp, filepath.Join(jarDir, j))
		}
	}
	return strings.Join(cp, ":")
}

// Server is one ZooKeeper process (standalone or a quorum peer) and, with
// Options.Proxied, the proxies in front of its client ports. Its methods
// may be called from any goroutine.
type Server struct {
	id          int // myid, 1-based; 0 for a standalone server
	clientPort  int
	securePort  int // 0 without Options.TLS
	peerPort    int
	electPort   int
	dir         string
	proxy       *netproxy.Proxy // before clientPort; nil without Options.Proxied
	secureProxy *netproxy.Proxy // before securePort; nil without Proxied and TLS

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has been waited for
}

// ID is the server's myid in an ensemble (1..n), or 0 for a standalone
// server.
func (s *Server) ID() int { return s.id }

// Addr is the address a client dials to reach the server,
// "127.0.0.1:port": its proxy's with Options.Proxied, else the server's own
// client port (DirectAddr).
func (s *Server) Addr() string {
	if s.proxy != nil {
		return s.proxy.Addr()
	}
	return s.DirectAddr()
}

// DirectAddr is the server's own client port, "127.0.0.1:port", which no
// proxy stands before: a client dialled there is never partitioned.
func (s *Server) DirectAddr() string { return fmt.Sprintf("127.0.0.1:%d", s.clientPort) }

// SecureAddr is the address a TLS client dials, "127.0.0.1:port" (its
// proxy's with Options.Proxied), or "" without Options.TLS.
func (s *Server) SecureAddr() string {
	switch {
	case s.securePort == 0:
		return ""
	case s.secureProxy != nil:
		return s.secureProxy.Addr()
	}
	return s.directSecureAddr()
}

func (s *Server) directSecureAddr() string { return fmt.Sprintf("127.0.0.1:%d", s.securePort) }

// Running reports whether the process is running.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

func (s *Server) start(main string, o Options) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		select {
		case <-s.done:
		default:
			return fmt.Errorf("zkserver: server %d already running", s.id)
		}
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	jvm := []string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"}
	if o.Throughput {
		jvm = []string{"-Xmx512m", "-Xms512m", "-Xshare:auto"}
	}
	args := append(jvm,
		"-Dzookeeper.admin.enableServer=false",
		fmt.Sprintf("-Dzookeeper.extendedTypesEnabled=%t", o.ExtendedTypes),
		"-Dzookeeper.cnxTimeout=500",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
		"-Dorg.slf4j.simpleLogger.showDateTime=true")
	if o.TLS {
		args = append(args, "-Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory")
	}
	for _, p := range o.SystemProperties {
		args = append(args, "-D"+p)
	}
	args = append(args, "-cp", classpath(), main, filepath.Join(s.dir, "zoo.cfg"))
	cmd := exec.Command("java", args...)
	cmd.Dir = s.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	fmt.Fprintf(logf, "=== zkserver: starting %s\n", main)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("zkserver: start java: %w", err)
	}
	done := make(chan struct{})
	s.cmd, s.done = cmd, done
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	return nil
}

// signal sends sig and waits for the process to exit (up to wait; after it
// SIGKILL). It is a no-op for a server that is not running.
func (s *Server) signal(sig syscall.Signal, wait time.Duration) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// Srvr sends the four-letter word srvr to the server's own port (never
// through its proxy) and returns the answer.
func (s *Server) Srvr(ctx context.Context) (string, error) {
	return fourLetter(ctx, s.DirectAddr(), "srvr")
}

// Mode returns the server's mode ("standalone", "leader", "follower") or
// an error when it does not serve: a peer without a quorum, a server that
// is not running. Like Srvr, it bypasses the proxy, so a partitioned
// server still answers.
func (s *Server) Mode(ctx context.Context) (string, error) {
	out, err := s.Srvr(ctx)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if m, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", fmt.Errorf("zkserver: %s not serving: %q", s.DirectAddr(), strings.TrimSpace(out))
}

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string {
	b, err := os.ReadFile(filepath.Join(s.dir, "server.log"))
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

func fourLetter(ctx context.Context, addr, word string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	} else {
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	}
	if _, err := c.Write([]byte(word)); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	_, err = buf.ReadFrom(c)
	if err != nil && buf.Len() == 0 {
		return "", err
	}
	return buf.String(), nil
}

// ownPort checks that the server answering on s's client port is s: its
// configuration names s's data directory. A server that another process
// beat to the port fails its bind and exits, while the port answers for
// the other one.
func (s *Server) ownPort(ctx context.Context) error {
	out, err := fourLetter(ctx, s.DirectAddr(), "conf")
	if err != nil {
		return err
	}
	if !strings.Contains(out, filepath.Join(s.dir, "data")) {
		return fmt.Errorf("%w: %s answers for another server", errPortTaken, s.DirectAddr())
	}
	return nil
}

// pickPorts chooses a new cluster's ports: freePorts (a test replaces it).
var pickPorts = freePorts

// freePorts returns n distinct free TCP ports on 127.0.0.1. The listeners
// are held until all are chosen, so the ports differ; another process may
// still take one before the server binds it (newCluster notices, and
// starts again on new ports).
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

package zkadapter

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// refusalDeadline is the deadline of a Dial that must fail: it fails at
// the deadline (Dial waits for a session until then), and the test allows
// a second more.
const refusalDeadline = 2 * time.Second

// dialRefused dials cfg and checks that Dial fails with ErrNoSession and
// DeadlineExceeded within refusalDeadline plus a second, with an error
// that names want.
func dialRefused(t *testing.T, cfg Config, want string) {
	t.Helper()
	cfg.Logger = testLogger(t)
	ctx, cancel := context.WithTimeout(context.Background(), refusalDeadline)
	defer cancel()
	start := time.Now()
	c, err := Dial(ctx, cfg)
	elapsed := time.Since(start)
	if err == nil {
		c.Close()
		t.Fatal("Dial succeeded")
	}
	if !errors.Is(err, ErrNoSession) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial = %v, want ErrNoSession and DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("Dial = %v, want an error naming %q", err, want)
	}
	t.Logf("Dial after %s: %v", elapsed.Round(time.Millisecond), err)
	if elapsed > refusalDeadline+time.Second {
		t.Errorf("Dial took %s, deadline %s", elapsed, refusalDeadline)
	}
}

// handshakes records the TLS handshakes a client configuration completes.
type handshakes struct {
	mu  sync.Mutex
	sni []string // the server name sent (none for an IP address), one per handshake
}

// watch sets cfg's VerifyConnection to record every handshake whose
// server certificate was verified, and returns cfg.
func (h *handshakes) watch(cfg *tls.Config) *tls.Config {
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.VerifiedChains) == 0 {
			return errors.New("test: server certificate not verified")
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.sni = append(h.sni, cs.ServerName)
		return nil
	}
	return cfg
}

func (h *handshakes) serverNames() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.sni...)
}

// roundTrip creates a node with data over c and reads it back.
func roundTrip(t *testing.T, c *Conn, r *recorder, path string) {
	t.Helper()
	mustOK(t, do(t, c, r, &task.CreateRequest{Path: path, Data: []byte("secret"), Mode: task.Persistent, ACL: task.OpenACL}, nil))
	if got := mustOK(t, do(t, c, r, &task.GetDataRequest{Path: path}, nil)); string(got.Data) != "secret" {
		t.Fatalf("get %s = %q, want %q", path, got.Data, "secret")
	}
}

// TestTLS runs against one server serving TLS without client
// authentication: a client that trusts the server's CA gets a session over
// TLS; a client that does not, a plaintext client on the TLS port and a
// TLS client on the plaintext port all fail Dial with a typed error at its
// deadline, not a hang.
func TestTLS(t *testing.T) {
	opts := serverOpts
	opts.TLS = true
	srv := zkserver.Standalone(t, opts)
	secure := srv.SecureAddrs()

	t.Run("round trip", func(t *testing.T) {
		var h handshakes
		cfg := h.watch(srv.CA().ClientConfig())
		c, r := open(t, Config{Servers: secure, TLS: cfg})
		roundTrip(t, c, r, "/tls")
		// Verified against the address's host, 127.0.0.1 (an IP
		// address: no server name sent), on a clone of the config.
		if names := h.serverNames(); len(names) != 1 || names[0] != "" {
			t.Fatalf("verified handshakes sent server names %q, want one handshake, none sent", names)
		}
		if cfg.ServerName != "" {
			t.Fatalf("Config.TLS modified: ServerName = %q", cfg.ServerName)
		}
	})

	for _, tc := range []struct {
		name    string
		servers []string
		tls     *tls.Config
		want    string
	}{
		{"unknown authority", secure, &tls.Config{RootCAs: x509.NewCertPool()}, "certificate signed by unknown authority"},
		{"plaintext client on the TLS port", secure, nil, "handshake with " + secure[0]},
		{"TLS client on the plaintext port", srv.Addrs(), srv.CA().ClientConfig(), "tls handshake"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each waits out its deadline
			dialRefused(t, Config{Servers: tc.servers, TLS: tc.tls}, tc.want)
		})
	}
}

// TestTLSMutual runs against a server that requires a client certificate
// (ssl.clientAuth=need): a client presenting one the CA issued gets a
// session; a client presenting none, or one from another CA, fails Dial
// with a typed error at its deadline.
func TestTLSMutual(t *testing.T) {
	opts := serverOpts
	opts.TLS = true
	opts.ClientAuth = zkserver.ClientAuthNeed
	srv := zkserver.Standalone(t, opts)

	t.Run("with a client certificate", func(t *testing.T) {
		c, r := open(t, Config{Servers: srv.SecureAddrs(), TLS: srv.CA().MutualConfig()})
		roundTrip(t, c, r, "/mtls")
	})

	other := zkserver.NewTestCA(t).MutualConfig()
	other.RootCAs = srv.CA().Pool()
	for _, tc := range []struct {
		name string
		tls  *tls.Config
		want string
	}{
		{"without a client certificate", srv.CA().ClientConfig(), "bad certificate"},
		{"with an untrusted client certificate", other, "unknown certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each waits out its deadline
			dialRefused(t, Config{Servers: srv.SecureAddrs(), TLS: tc.tls}, tc.want)
		})
	}
}

// TestTLSDialServerName: without a ServerName, tlsDial verifies the
// server's certificate against the host it dials, on a clone of the
// configuration; a ServerName set is kept. A Go TLS server stands in for
// ZooKeeper, with a certificate for localhost and 127.0.0.1.
func TestTLSDialServerName(t *testing.T) {
	ca := zkserver.NewTestCA(t)
	certPEM, keyPEM, err := ca.Issue("go-server")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	addr := acceptEach(t, l, func(nc net.Conn) {
		_ = nc.(*tls.Conn).Handshake()
		nc.Close()
	})
	_, port, _ := net.SplitHostPort(addr)

	for _, tc := range []struct {
		addr, serverName string
		sni              string // the server name sent; none for an IP address
		err              string // the error wanted, if any
	}{
		{addr: "localhost:" + port, sni: "localhost"},
		{addr: "127.0.0.1:" + port, sni: ""},
		{addr: "127.0.0.1:" + port, serverName: "localhost", sni: "localhost"},
		{addr: "localhost:" + port, serverName: "zk.example", err: "certificate is valid for localhost, not zk.example"},
	} {
		var h handshakes
		cfg := h.watch(ca.ClientConfig())
		cfg.ServerName = tc.serverName
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		nc, err := tlsDial(ctx, nil, cfg, "tcp", tc.addr)
		cancel()
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("tlsDial %s (ServerName %q) = %v, want an error naming %q", tc.addr, tc.serverName, err, tc.err)
			}
			if err == nil {
				nc.Close()
			}
		case err != nil:
			t.Errorf("tlsDial %s (ServerName %q): %v", tc.addr, tc.serverName, err)
		default:
			nc.Close()
			if names := h.serverNames(); len(names) != 1 || names[0] != tc.sni {
				t.Errorf("tlsDial %s (ServerName %q): verified handshakes sent %q, want one sending %q", tc.addr, tc.serverName, names, tc.sni)
			}
		}
		if cfg.ServerName != tc.serverName {
			t.Errorf("tlsDial modified the config: ServerName %q", cfg.ServerName)
		}
	}
}

// TestTLSHandshakeBounded: a server that accepts the connection and never
// answers the handshake costs the connect timeout, not a hang; the error
// names the handshake and the deadline. It runs through Config.Dialer, as
// any injected dialer would.
func TestTLSHandshakeBounded(t *testing.T) {
	addr := silentListener(t)
	var dials atomic.Int32
	dialer := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	ca := zkserver.NewTestCA(t)

	const connectTimeout = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	start := time.Now()
	_, err := tlsDial(ctx, dialer, ca.ClientConfig(), "tcp", addr)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "tls handshake") {
		t.Fatalf("tlsDial = %v, want a tls handshake error wrapping DeadlineExceeded", err)
	}
	if el := time.Since(start); el > connectTimeout+time.Second {
		t.Fatalf("tlsDial took %s, deadline %s", el, connectTimeout)
	}

	dialRefused(t, Config{Servers: []string{addr}, TLS: ca.ClientConfig(),
		Dialer: dialer, ConnectTimeout: connectTimeout}, "tls handshake")
	if n := dials.Load(); n < 2 {
		t.Fatalf("%d dials, want the injected dialer used for each", n)
	}
}

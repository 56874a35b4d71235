package zkserver

import (
	"context"
	"crypto/tls"
	"io"
	"strings"
	"testing"
	"time"
)

// TestSecureClientPort: a server with TLS and mutual authentication serves
// the four-letter word srvr on its secure port to a client presenting the
// CA's certificate, refuses a client without one and one that does not
// trust the CA, and still serves its plaintext port.
func TestSecureClientPort(t *testing.T) {
	c := Standalone(t, Options{TLS: true, ClientAuth: ClientAuthNeed})
	s := c.Server(0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if m, err := s.Mode(ctx); err != nil || m != "standalone" {
		t.Fatalf("plaintext port: mode = %q, %v; want standalone", m, err)
	}
	if got, want := c.SecureAddrs(), []string{s.SecureAddr()}; len(got) != 1 || got[0] != want[0] || !strings.HasPrefix(want[0], "127.0.0.1:") {
		t.Fatalf("SecureAddrs = %v, SecureAddr = %q", got, want[0])
	}

	out, err := tlsSrvr(ctx, s.SecureAddr(), c.CA().MutualConfig())
	if err != nil || !strings.Contains(out, "Mode: standalone") {
		t.Fatalf("srvr over TLS = %q, %v", out, err)
	}

	// other is a CA neither side trusts.
	other := NewTestCA(t)
	untrusting := c.CA().MutualConfig()
	untrusting.RootCAs = other.Pool()
	untrusted := other.MutualConfig()
	untrusted.RootCAs = c.CA().Pool()
	for _, tc := range []struct {
		name string
		cfg  *tls.Config
		want string
	}{
		{"no client certificate", c.CA().ClientConfig(), "bad certificate"},
		{"server not trusted", untrusting, "unknown authority"},
		{"client not trusted", untrusted, "unknown certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tlsSrvr(ctx, s.SecureAddr(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("srvr over TLS = %q, %v; want an error naming %q", out, err, tc.want)
			}
		})
	}
}

// tlsSrvr sends srvr over TLS and returns the answer. With TLS 1.3 a
// refused client certificate shows at the first read, not in the
// handshake: the answer must be read to see it.
func tlsSrvr(ctx context.Context, addr string, cfg *tls.Config) (string, error) {
	d := tls.Dialer{Config: cfg}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	if _, err := nc.Write([]byte("srvr")); err != nil {
		return "", err
	}
	b, err := io.ReadAll(nc)
	return string(b), err
}

// TestTLSOptionsRejected: options that make no sense fail before anything
// starts, ZooKeeper installed or not.
func TestTLSOptionsRejected(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"unknown client auth", Options{TLS: true, ClientAuth: "sometimes"}, `ClientAuth "sometimes"`},
		{"client auth without TLS", Options{ClientAuth: ClientAuthNeed}, "without TLS"},
		{"CA without TLS", Options{CA: NewTestCA(t)}, "without TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewStandalone(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				if c != nil {
					c.Close()
				}
				t.Fatalf("NewStandalone: %v; want an error naming %q", err, tc.want)
			}
		})
	}
}

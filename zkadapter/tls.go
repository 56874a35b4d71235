package zkadapter

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
)

// tlsDial opens one connection to addr with base (a net.Dialer when nil)
// and, when cfg is not nil, runs a TLS client handshake over it, bounded by
// ctx: a server that accepts the TCP connection and never answers costs
// the connect timeout, not a hang. When cfg has no ServerName, a clone of
// cfg gets addr's host (a name or an IP address, verified against the
// certificate's DNS or IP names); cfg itself is never modified.
//
// A failed handshake closes the TCP connection and returns an error that
// says so, wrapping crypto/tls's (which names the certificate problem,
// such as "x509: certificate signed by unknown authority"). go-zookeeper
// then treats it as any failed connect: it tries the next server.
//
// With TLS 1.3 a server that requires a client certificate and got none
// (or an untrusted one) refuses it after the client's side of the
// handshake is done: that shows as an error on the first read, when the
// connect response is awaited, not here.
func tlsDial(ctx context.Context, base Dialer, cfg *tls.Config, network, addr string) (net.Conn, error) {
	var nc net.Conn
	var err error
	if base != nil {
		nc, err = base(ctx, network, addr)
	} else {
		var d net.Dialer
		nc, err = d.DialContext(ctx, network, addr)
	}
	if err != nil || cfg == nil {
		return nc, err
	}
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			nc.Close()
			return nil, err
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("tls handshake (server name %q): %w", cfg.ServerName, err)
	}
	return tc, nil
}

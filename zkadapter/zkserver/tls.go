package zkserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ClientAuth is the secure client port's ssl.clientAuth: whether the
// server asks TLS clients for a certificate.
type ClientAuth string

// The values of ssl.clientAuth. ZooKeeper's own default, when the property
// is absent, is need; Options leaves it at none unless told.
const (
	ClientAuthNone ClientAuth = "none" // no client certificate asked for
	ClientAuthWant ClientAuth = "want" // asked for, not required
	ClientAuthNeed ClientAuth = "need" // required: mutual TLS
)

// CA is a certificate authority made for one test run: a self-signed ECDSA
// P-256 root that issues certificates valid for 127.0.0.1, ::1 and
// localhost, for a day. Its methods may be called from any goroutine.
type CA struct {
	// CertPEM is the CA's certificate, PEM-encoded: the trust store of
	// servers (for client certificates) and clients (for the server's).
	CertPEM []byte
	// ClientCertPEM and ClientKeyPEM are a client certificate issued by
	// the CA (common name "zkflow-test-client") and its PKCS #8 key, for
	// mutual TLS; MutualConfig presents them.
	ClientCertPEM, ClientKeyPEM []byte

	cert       *x509.Certificate
	key        *ecdsa.PrivateKey
	clientCert tls.Certificate
}

// NewTestCA returns a new CA, or fails t.
func NewTestCA(t testing.TB) *CA {
	t.Helper()
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// NewCA returns a new CA with its client certificate issued.
func NewCA() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("zkserver: CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "zkflow test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("zkserver: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("zkserver: CA certificate: %w", err)
	}
	ca := &CA{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), cert: cert, key: key}
	if ca.ClientCertPEM, ca.ClientKeyPEM, err = ca.Issue("zkflow-test-client"); err != nil {
		return nil, err
	}
	if ca.clientCert, err = tls.X509KeyPair(ca.ClientCertPEM, ca.ClientKeyPEM); err != nil {
		return nil, fmt.Errorf("zkserver: client certificate: %w", err)
	}
	return ca, nil
}

// Issue returns a new certificate signed by the CA, for name (its common
// name) and the loopback names 127.0.0.1, ::1 and localhost, good for both
// server and client authentication, and its private key as PKCS #8 (the
// form ZooKeeper's PEM reader takes), both PEM-encoded.
func (ca *CA) Issue(name string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("zkserver: key for %s: %w", name, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial.Add(serial, big.NewInt(2)),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("zkserver: certificate for %s: %w", name, err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), nil
}

// Pool returns a pool holding the CA's certificate.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// ClientConfig returns a TLS client configuration that trusts the CA and
// presents no certificate. ServerName is left empty (zkadapter fills in
// the host of the address it dials).
func (ca *CA) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
}

// MutualConfig is ClientConfig presenting the CA's client certificate.
func (ca *CA) MutualConfig() *tls.Config {
	c := ca.ClientConfig()
	c.Certificates = []tls.Certificate{ca.clientCert}
	return c
}

// writeTLSFiles writes the server's PEM key store (its private key, then
// its certificate and the CA's: ZooKeeper reads both from the one file)
// and trust store (the CA) into s.dir.
func (c *Cluster) writeTLSFiles(s *Server) error {
	certPEM, keyPEM, err := c.ca.Issue(fmt.Sprintf("zkserver-%d", s.id))
	if err != nil {
		return err
	}
	ks := append(append(append([]byte(nil), keyPEM...), certPEM...), c.ca.CertPEM...)
	if err := os.WriteFile(filepath.Join(s.dir, "keystore.pem"), ks, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.dir, "truststore.pem"), c.ca.CertPEM, 0o644)
}

// tlsConfigLines are zoo.cfg's lines for the secure client port. Keys
// ZooKeeper does not know in zoo.cfg (ssl.*) become system properties with
// the prefix "zookeeper.", which is where its TLS code reads them. A client
// certificate, when presented, authenticates the session as
// x509:<subject DN> (ZooKeeper registers the x509 scheme itself).
func (c *Cluster) tlsConfigLines(s *Server) []string {
	return []string{
		fmt.Sprintf("secureClientPort=%d", s.securePort),
		"secureClientPortAddress=127.0.0.1",
		"ssl.keyStore.location=" + filepath.Join(s.dir, "keystore.pem"),
		"ssl.keyStore.type=PEM",
		"ssl.trustStore.location=" + filepath.Join(s.dir, "truststore.pem"),
		"ssl.trustStore.type=PEM",
		// Written always: ZooKeeper's default, when absent, is need.
		"ssl.clientAuth=" + string(c.opts.ClientAuth),
	}
}

// waitTLS waits for a TLS handshake on server s's secure port to succeed:
// ZooKeeper opens the secure port after the plaintext one. It presents the
// CA's client certificate, which every ClientAuth accepts.
func (c *Cluster) waitTLS(ctx context.Context, s *Server) error {
	var last error
	for {
		hctx, cancel := context.WithTimeout(ctx, time.Second)
		d := tls.Dialer{Config: c.ca.MutualConfig()}
		nc, err := d.DialContext(hctx, "tcp", s.directSecureAddr())
		cancel()
		if err == nil {
			nc.Close()
			return nil
		}
		last = err
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("zkserver: server %d (%s) not serving TLS: %v (last: %v)\n%s",
				s.id, s.directSecureAddr(), ctx.Err(), last, s.LogTail(30))
		case <-t.C:
		}
	}
}

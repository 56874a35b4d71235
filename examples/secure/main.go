// Command secure connects to ZooKeeper over TLS: it verifies the server's
// certificate against a CA, presents a client certificate when given one
// (mutual TLS, for a server with ssl.clientAuth=need), then writes a node,
// reads it back and deletes it. TLS needs a real server: there is no
// embedded mode.
//
//	go run ./examples/secure -zk 127.0.0.1:2281 -ca ca.pem
//	go run ./examples/secure -zk 127.0.0.1:2281 -ca ca.pem -cert client.pem -key client-key.pem
//
// -zk names the servers' TLS ports (ZooKeeper's secureClientPort, served by
// the Netty connection factory). Without -ca the system's roots are
// trusted. The server certificate is checked against the host of each
// address unless -server-name names another.
//
// With -user and -password the connection also presents digest
// credentials (zkadapter.Config.Auth, sent on every connection before any
// request) and the node is created readable and writable by that user
// only: both halves of a secured connection, the channel and the identity.
package main

import (
	"context"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter"
)

func main() {
	// Ctrl-C ends the run's context: the run stops and still deletes its
	// nodes; a second Ctrl-C kills it at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	context.AfterFunc(ctx, stop)
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage is printed
		}
		fmt.Fprintf(os.Stderr, "secure: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	servers    string
	caFile     string
	certFile   string
	keyFile    string
	serverName string
	user       string
	password   string
	timeout    time.Duration
}

func parse(args []string, out io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("secure", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.servers, "zk", "", "ZooKeeper TLS addresses, host:port[,host:port...][/root] (the root node must exist; required)")
	fs.StringVar(&o.caFile, "ca", "", "PEM file of the CA certificates to trust; empty trusts the system's roots")
	fs.StringVar(&o.certFile, "cert", "", "PEM file of the client certificate (with -key), for mutual TLS")
	fs.StringVar(&o.keyFile, "key", "", "PEM file of the client certificate's private key (with -cert)")
	fs.StringVar(&o.serverName, "server-name", "", "name to verify the server certificate against; empty means each address's host")
	fs.StringVar(&o.user, "user", "", "digest user to authenticate as (with -password); the node is then that user's only")
	fs.StringVar(&o.password, "password", "", "digest password (with -user)")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.servers == "":
		return nil, errors.New("-zk is required: TLS needs a real server")
	case (o.certFile == "") != (o.keyFile == ""):
		return nil, errors.New("-cert and -key go together")
	case (o.user == "") != (o.password == ""):
		return nil, errors.New("-user and -password go together")
	}
	return o, nil
}

// tlsConfig builds the client's TLS configuration from the files named.
// It records the subject of the server certificate each handshake
// verified, for the output.
func (o *options) tlsConfig(seen *peer) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.serverName}
	if o.caFile != "" {
		b, err := os.ReadFile(o.caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("%s: no PEM certificate", o.caFile)
		}
	}
	if o.certFile != "" {
		cert, err := tls.LoadX509KeyPair(o.certFile, o.keyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	cfg.VerifyConnection = seen.record
	return cfg, nil
}

// peer is the last server certificate a handshake verified. record runs
// on go-zookeeper's connecting goroutine, once per handshake.
type peer struct {
	mu      sync.Mutex
	subject string
	issuer  string
	version uint16
}

func (p *peer) record(cs tls.ConnectionState) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(cs.PeerCertificates) > 0 {
		p.subject = cs.PeerCertificates[0].Subject.String()
		p.issuer = cs.PeerCertificates[0].Issuer.String()
	}
	p.version = cs.Version
	return nil
}

func (p *peer) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("%s, server certificate %q issued by %q", tls.VersionName(p.version), p.subject, p.issuer)
}

func run(ctx context.Context, args []string, out io.Writer) error {
	o, err := parse(args, out)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	var seen peer
	tcfg, err := o.tlsConfig(&seen)
	if err != nil {
		return err
	}
	// -zk is a connect string, as Curator's and kazoo's:
	// "host:port[,host:port...][/root]". Its root (ZooKeeper's chroot, a
	// node that must exist) is the session's "/": every path is under it.
	servers, chroot, err := zkadapter.ParseConnectString(o.servers)
	if err != nil {
		return fmt.Errorf("-zk %q: %w", o.servers, err)
	}
	cfg := zkadapter.Config{
		Servers:        servers,
		Root:           chroot,
		SessionTimeout: 10 * time.Second,
		TLS:            tcfg,
	}
	acl := task.OpenACL
	if o.user != "" {
		cfg.Auth = []task.AuthInfo{{Scheme: "digest", Auth: []byte(o.user + ":" + o.password)}}
		acl = []task.ACL{{Perms: task.PermAll, Scheme: "digest", ID: digestID(o.user, o.password)}}
	}
	// Dial gets a bound of its own: a wrong address fails within seconds,
	// not when the whole run's context ends.
	dctx, dcancel := context.WithTimeout(ctx, 15*time.Second)
	conn, err := zkadapter.Dial(dctx, cfg)
	dcancel()
	if err != nil {
		return fmt.Errorf("connecting to %s over TLS: %w", o.servers, err)
	}
	ex, err := executor.New(executor.Config{Conn: conn})
	if err != nil {
		conn.Close()
		return err
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(runCtx) }()
	defer func() { stop(); <-done }() // closes the session

	fmt.Fprintf(out, "session %#x over %s\n", conn.SessionID(), &seen)
	path := fmt.Sprintf("/secure-example-%016x", rand.Uint64())
	data := []byte("sent over TLS")
	if _, err := executor.Await(ctx, ex, task.CreateWith(&task.CreateRequest{Path: path, Data: data, Mode: task.Ephemeral, ACL: acl})); err != nil {
		return err
	}
	got, err := executor.Await(ctx, ex, task.Get(path))
	if err != nil {
		return err
	}
	if string(got.Data) != string(data) {
		return fmt.Errorf("read %q back from %s, wrote %q", got.Data, path, data)
	}
	fmt.Fprintf(out, "wrote and read back %s: %q\n", path, got.Data)
	if _, err := executor.Await(ctx, ex, task.Delete(path, task.AnyVersion)); err != nil {
		return err
	}
	fmt.Fprintln(out, "OK")
	return nil
}

// digestID is ZooKeeper's digest ACL id of user:password.
func digestID(user, password string) string {
	h := sha1.Sum([]byte(user + ":" + password))
	return user + ":" + base64.StdEncoding.EncodeToString(h[:])
}

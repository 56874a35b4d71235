package zkadapter

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/zkflow/zkflow/task"
)

// Defaults applied by Config.Validate to zero fields.
const (
	DefaultSessionTimeout = 10 * time.Second
	DefaultConnectTimeout = time.Second
)

// Dialer opens one TCP connection to one server. The context ends when the
// connect timeout passes or the Conn is closed.
type Dialer func(ctx context.Context, network, address string) (net.Conn, error)

// Config describes a connection. The zero value is not valid: Servers is
// required; every other field has a default.
type Config struct {
	// Servers are the ensemble's client addresses, "host:port" each.
	Servers []string
	// Root, when set, is the path every path of the Conn is relative to
	// (ZooKeeper's chroot: "/app" in "zk1:2181,zk2:2181/app"; see
	// ParseConnectString): requests go under it and paths handed back
	// have it taken off. The node must exist: Dial fails with
	// task.ErrNoNode when it does not. "" or "/" means none.
	Root string
	// SessionTimeout is the timeout the client asks for; the server
	// negotiates it into [minSessionTimeout, maxSessionTimeout] and the
	// StateConnected event carries the negotiated value. Default 10s.
	SessionTimeout time.Duration
	// ConnectTimeout bounds one TCP connect to one server. Default 1s.
	ConnectTimeout time.Duration
	// DialTimeout bounds Dial and Connect when their context has no
	// deadline (context.Background()): past it they give up as if the
	// context had ended then (the error wraps context.DeadlineExceeded).
	// A context with a deadline is bounded by it alone. Default: the
	// session timeout plus one ConnectTimeout per server, time for one
	// attempt at every server (11s for one server with the defaults),
	// saturated at the largest Duration.
	DialTimeout time.Duration
	// Dialer opens connections; nil means a net.Dialer. Tests use it to
	// inject partitions.
	Dialer Dialer
	// TLS, when not nil, secures every connection: a TLS client handshake
	// with this configuration right after the TCP connect, bounded by
	// ConnectTimeout. Servers must then name the servers' TLS ports
	// (ZooKeeper's secureClientPort). An empty ServerName means the host
	// of the address dialed (a clone of TLS gets it; TLS is not
	// modified). A failed handshake is a failed connect: go-zookeeper
	// tries the next server, and Dial's error names the failure (such as
	// "certificate signed by unknown authority"). Nil means plaintext.
	TLS *tls.Config
	// Logger receives go-zookeeper's log lines (connection attempts and
	// failures at Warn, the rest at Debug) and the adapter's own. Nil
	// discards them.
	Logger *slog.Logger
	// Observer, if not nil, is told what only the connection knows, through
	// its OnConn callback (the Conn makes no other): each connection
	// attempt (task.ConnAttempt, with Err when the dial failed), each
	// handshake that failed (task.ConnHandshakeFailed), each session made
	// usable on a connection (task.ConnEstablished, Reconnect when the
	// session resumed), each request that joined the spill queue
	// (task.ConnSpill with its depth). OnConn runs on go-zookeeper's
	// connection goroutine (attempts, handshakes, sessions) or the
	// caller of Do (spills), mostly with the Conn's lock held: it must not
	// block or call the Conn. Give the executor the same Observer for the
	// rest.
	Observer *task.Observer
	// MaxDataSize is the data limit task.Validate checks before sending
	// (default task.MaxDataSize), at most 1 GiB: go-zookeeper allocates an
	// encode buffer of MaxDataSize plus 512 KiB when the Conn opens.
	MaxDataSize int
	// Auth are the credentials the connection presents (ZooKeeper's
	// addAuth), such as {Scheme: "digest", Auth: []byte("user:password")}:
	// on every connection, before any request of the Conn, so a session
	// is authenticated again after every reconnect and a new session after
	// an expiry is too. Dial returns once the server accepted them; a
	// credential the server refuses (AuthFailed: a scheme it has no
	// provider for) is final, as in ZooKeeper's own client: the Conn
	// closes itself and Dial fails with task.CodeAuthFailed. A credential
	// whose setAuth request is longer than MaxPacketSize on the wire (the
	// scheme and credential plus 20 bytes), which the server would answer
	// by closing every connection, is an invalid Config.
	Auth []task.AuthInfo
	// MaxPacketSize is the server's jute.maxbuffer (default
	// task.MaxPacketSize, at most 1 GiB): a request longer than this on
	// the wire fails with task.ErrDataTooLarge without being sent, where
	// the server would close the connection. Data near task.MaxDataSize
	// (1 MiB) is over it once the path, ACL and headers are counted. The
	// prelude's SetWatches requests are split to fit it (at 128 KiB, or
	// MaxPacketSize when smaller), and a watch whose path alone would not
	// fit one (over MaxPacketSize minus 32 bytes; 40 for addWatch) fails
	// with task.ErrDataTooLarge too; so is a credential that does not fit
	// (Auth) an invalid Config. Set above the encode buffer (MaxDataSize
	// plus 512 KiB, 1.5 MiB by default), a request the buffer cannot hold
	// fails with task.ErrDataTooLarge too, unsent.
	MaxPacketSize int
}

// ErrInvalidConfig is wrapped by every error Config.Validate returns.
var ErrInvalidConfig = errors.New("zkadapter: invalid config")

// ConfigError names the field of a Config that is wrong and why.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("zkadapter: invalid config: %s: %s", e.Field, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidConfig) true.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// Validate checks c and fills in the defaults of zero fields. The error is
// a *ConfigError (errors.Is(err, ErrInvalidConfig)).
func (c *Config) Validate() error {
	if len(c.Servers) == 0 {
		return &ConfigError{"Servers", "no server address"}
	}
	for i, s := range c.Servers {
		if err := validateAddr(s); err != nil {
			return &ConfigError{fmt.Sprintf("Servers[%d]", i), err.Error()}
		}
	}
	if c.Root == "/" {
		c.Root = "" // as ZooKeeper's client: "/" is no root
	}
	if c.Root != "" {
		if err := validateRoot(c.Root); err != nil {
			return &ConfigError{"Root", err.Error()}
		}
	}
	switch {
	case c.SessionTimeout == 0:
		c.SessionTimeout = DefaultSessionTimeout
	case c.SessionTimeout < time.Millisecond || c.SessionTimeout.Milliseconds() > math.MaxInt32:
		return &ConfigError{"SessionTimeout", fmt.Sprintf("%s is out of range (1ms to %dms)", c.SessionTimeout, math.MaxInt32)}
	}
	switch {
	case c.ConnectTimeout == 0:
		c.ConnectTimeout = DefaultConnectTimeout
	case c.ConnectTimeout < 0:
		return &ConfigError{"ConnectTimeout", fmt.Sprintf("%s is negative", c.ConnectTimeout)}
	}
	switch {
	case c.DialTimeout == 0:
		// Saturated: a ConnectTimeout meant as "no bound" (math.MaxInt64)
		// must not wrap the sum negative.
		c.DialTimeout = math.MaxInt64
		if per := (math.MaxInt64 - c.SessionTimeout) / time.Duration(max(len(c.Servers), 1)); c.ConnectTimeout <= per {
			c.DialTimeout = c.SessionTimeout + time.Duration(len(c.Servers))*c.ConnectTimeout
		}
	case c.DialTimeout < 0:
		return &ConfigError{"DialTimeout", fmt.Sprintf("%s is negative", c.DialTimeout)}
	}
	switch {
	case c.MaxPacketSize == 0:
		c.MaxPacketSize = task.MaxPacketSize
	case c.MaxPacketSize < 0 || c.MaxPacketSize > maxSizeLimit:
		return &ConfigError{"MaxPacketSize", fmt.Sprintf("%d is out of range (1 to %d)", c.MaxPacketSize, maxSizeLimit)}
	}
	for i, a := range c.Auth {
		if a.Scheme == "" {
			return &ConfigError{fmt.Sprintf("Auth[%d]", i), "no scheme"}
		}
		if n := authPacketSize(a); n > c.MaxPacketSize {
			// The server would close every connection on it.
			return &ConfigError{fmt.Sprintf("Auth[%d]", i), fmt.Sprintf(
				"its setAuth request is %d bytes on the wire, over MaxPacketSize %d (jute.maxbuffer)", n, c.MaxPacketSize)}
		}
	}
	switch {
	case c.MaxDataSize == 0:
		c.MaxDataSize = task.MaxDataSize
	case c.MaxDataSize < 0 || c.MaxDataSize > maxSizeLimit:
		return &ConfigError{"MaxDataSize", fmt.Sprintf("%d is out of range (1 to %d)", c.MaxDataSize, maxSizeLimit)}
	}
	return nil
}

func validateAddr(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %v", s, err)
	}
	if host == "" {
		return fmt.Errorf("%q has no host", s)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q has no valid port (1-65535)", s)
	}
	return nil
}

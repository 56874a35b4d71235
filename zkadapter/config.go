package zkadapter

import (
	"context"
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
	// SessionTimeout is the timeout the client asks for; the server
	// negotiates it into [minSessionTimeout, maxSessionTimeout] and the
	// StateConnected event carries the negotiated value. Default 10s.
	SessionTimeout time.Duration
	// ConnectTimeout bounds one TCP connect to one server. Default 1s.
	ConnectTimeout time.Duration
	// Dialer opens connections; nil means a net.Dialer. Tests use it to
	// inject partitions.
	Dialer Dialer
	// Logger receives go-zookeeper's log lines (connection attempts and
	// failures at Warn, the rest at Debug) and the adapter's own. Nil
	// discards them.
	Logger *slog.Logger
	// MaxDataSize is the data limit task.Validate checks before sending
	// (default task.MaxDataSize).
	MaxDataSize int
	// MaxPacketSize is the server's jute.maxbuffer (default
	// DefaultMaxPacketSize): a request longer than this on the wire fails
	// with task.ErrDataTooLarge without being sent, where the server
	// would close the connection. Data near task.MaxDataSize (1 MiB) is
	// over it once the path, ACL and headers are counted.
	MaxPacketSize int
	// Root is a placeholder for the chroot field being added on main; it
	// is ignored here.
	Root string
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
	case c.MaxPacketSize == 0:
		c.MaxPacketSize = DefaultMaxPacketSize
	case c.MaxPacketSize < 0:
		return &ConfigError{"MaxPacketSize", fmt.Sprintf("%d is negative", c.MaxPacketSize)}
	}
	switch {
	case c.MaxDataSize == 0:
		c.MaxDataSize = task.MaxDataSize
	case c.MaxDataSize < 0:
		return &ConfigError{"MaxDataSize", fmt.Sprintf("%d is negative", c.MaxDataSize)}
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

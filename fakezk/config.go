package fakezk

import (
	"cmp"
	"errors"
	"strings"
	"time"

	"github.com/zkflow/zkflow/task"
)

// Config describes a Server. The zero value is a usable automatic-mode
// server on the wall clock, like a real one: timed faults heal and
// sessions expire in real time.
type Config struct {
	// Seed drives every random choice: children order, the interleaving of
	// sessions in deterministic mode and drawn faults.
	Seed uint64
	// Clock is the server's time source (ctime/mtime, session expiry,
	// partitions, delays). Nil means the wall clock (task.RealClock()) in
	// automatic mode and NewClock(Epoch) in deterministic mode. An
	// executor on one of the server's Conns runs on this clock too unless
	// its own Config.Clock says otherwise (Conn.Clock).
	Clock task.Clock
	// Deterministic holds every request and delivery until Step or
	// RunUntilIdle runs it. Otherwise requests are applied inside Do and
	// deliveries happen at once on the goroutine that caused them.
	Deterministic bool
	// Async, in automatic mode, delivers from one goroutine of the server
	// instead of the goroutine that caused the delivery, so that Do never
	// calls back before it returns. The goroutine starts with New and stops
	// with Server.Close, which the user must call. An executor works on a
	// Conn in either mode (what a Conn delivers is queued for the
	// executor's goroutine); with several executors on one server, Async
	// makes each delivery come from the server's goroutine, as from a real
	// server's connection, rather than from another executor's.
	Async bool
	// TickTime is the server's tick (default 2s). Session timeouts are
	// negotiated into [2*TickTime, 20*TickTime], as ZooKeeper does, unless
	// MinSessionTimeout or MaxSessionTimeout say otherwise.
	TickTime time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound the session timeouts
	// the server grants (minSessionTimeout and maxSessionTimeout of
	// zoo.cfg); 0 means 2*TickTime and 20*TickTime, ZooKeeper's defaults.
	// See Server.NegotiateTimeout.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// MaxDataSize is the data limit (jute.maxbuffer); <= 0 means 1 MiB.
	MaxDataSize int
	// MaxPacketSize is the server's packet limit (jute.maxbuffer): a
	// request longer than this on the wire (as zkadapter encodes it) fails
	// with task.ErrDataTooLarge and is not applied, as zkadapter rejects it
	// before sending where a real server would close the connection. 0
	// means task.MaxPacketSize (0xfffff); < 0 means no limit.
	MaxPacketSize int
	// ExtendedTypes enables TTL nodes (zookeeper.extendedTypesEnabled). When
	// false, as on a default 3.8 server, TTL creates fail with ErrUnimplemented.
	ExtendedTypes bool
	// ContainerCheckInterval is how often the server's container manager
	// runs (znode.container.checkIntervalMs; 0 means the server's default,
	// DefaultContainerCheckInterval, a minute), counted on the clock from
	// the server's start. A run deletes the empty containers that have had
	// a child and the childless TTL nodes whose TTL has passed since their
	// mtime; nothing is deleted between runs (reap.go).
	ContainerCheckInterval time.Duration
	// ContainerMaxPerMinute bounds a run's deletions
	// (znode.container.maxPerMinute; 0 means DefaultContainerMaxPerMinute,
	// 10000): they are spaced a minute/ContainerMaxPerMinute apart, in
	// whole milliseconds, as the server sleeps between them.
	ContainerMaxPerMinute int
	// ContainerMaxNeverUsed, if positive, lets a run also delete an empty
	// container that never had a child once more than this (in whole
	// milliseconds) has passed since its mtime
	// (znode.container.maxNeverUsedIntervalMs). 0, the server's default,
	// keeps such containers for ever.
	ContainerMaxNeverUsed time.Duration
	// SuperDigest is zookeeper.DigestAuthenticationProvider.superDigest,
	// "user:base64(sha1(user:password))" (task.DigestID's form): a
	// connection that authenticates with digest credentials of that id
	// is the super user, whom no ACL stops. Empty means none.
	SuperDigest string
	// Journal, if not nil, is told of every zxid the server takes, with
	// the nodes its transaction changed (Commit), in zxid order. It runs
	// with the server's lock held, on the goroutine that applied the
	// transaction, before the transaction's reply is queued and before
	// its watches fire: a journal that writes the commit to disk and
	// syncs it before it returns makes every reply a client sees
	// describe durable state. It must not call the Server. It is not told
	// of Wipe and SetCounters (faults and test set-up, not transactions).
	Journal func(Commit)
	// Trace records every request, response, notification and fault.
	Trace bool
	// FaultRate is, in deterministic mode, the chance per Step of injecting a
	// fault drawn from the seed (0 = none). See Faults.
	FaultRate float64
	// Faults bounds drawn faults.
	Faults FaultConfig
}

// The container manager's defaults, a 3.8 server's
// (ZooKeeperServerMain reads the system properties
// znode.container.checkIntervalMs and znode.container.maxPerMinute).
const (
	DefaultContainerCheckInterval = time.Minute
	DefaultContainerMaxPerMinute  = 10000
)

// FaultConfig bounds the faults drawn when Config.FaultRate > 0.
type FaultConfig struct {
	MaxPartition time.Duration // longest drawn partition (default 3 * session timeout)
	MaxDelay     time.Duration // longest drawn delivery delay (default 1s)
	NoExpire     bool          // never draw an outright session expiry
}

// Validate reports a configuration error.
func (c *Config) Validate() error {
	if c.TickTime < 0 {
		return errors.New("fakezk: negative TickTime")
	}
	if c.MinSessionTimeout < 0 || c.MaxSessionTimeout < 0 {
		return errors.New("fakezk: negative session timeout bound")
	}
	tick, lo, hi := cmp.Or(c.TickTime, 2*time.Second), c.MinSessionTimeout, c.MaxSessionTimeout
	if cmp.Or(lo, 2*tick) > cmp.Or(hi, 20*tick) {
		// QuorumPeerConfig refuses it too.
		return errors.New("fakezk: MinSessionTimeout above MaxSessionTimeout (defaults 2 and 20 ticks)")
	}
	if c.Async && c.Deterministic {
		return errors.New("fakezk: Async and Deterministic exclude each other")
	}
	if c.FaultRate < 0 || c.FaultRate > 1 {
		return errors.New("fakezk: FaultRate outside [0, 1]")
	}
	if c.SuperDigest != "" && !strings.Contains(c.SuperDigest, ":") {
		return errors.New("fakezk: SuperDigest is not user:digest")
	}
	if c.ContainerCheckInterval < 0 || c.ContainerMaxPerMinute < 0 || c.ContainerMaxNeverUsed < 0 {
		return errors.New("fakezk: negative container manager setting")
	}
	return nil
}

func (c *Config) ensureDefaults() {
	if c.Clock == nil && c.Deterministic {
		c.Clock = NewClock(Epoch)
	} else if c.Clock == nil {
		c.Clock = task.RealClock()
	}
	if c.TickTime == 0 {
		c.TickTime = 2 * time.Second
	}
	if c.MinSessionTimeout == 0 {
		c.MinSessionTimeout = 2 * c.TickTime
	}
	if c.MaxSessionTimeout == 0 {
		c.MaxSessionTimeout = 20 * c.TickTime
	}
	if c.MaxDataSize <= 0 {
		c.MaxDataSize = task.MaxDataSize
	}
	if c.MaxPacketSize == 0 {
		c.MaxPacketSize = task.MaxPacketSize
	}
	if c.ContainerCheckInterval == 0 {
		c.ContainerCheckInterval = DefaultContainerCheckInterval
	}
	if c.ContainerMaxPerMinute == 0 {
		c.ContainerMaxPerMinute = DefaultContainerMaxPerMinute
	}
	if c.Faults.MaxDelay <= 0 {
		c.Faults.MaxDelay = time.Second
	}
}

// NegotiateTimeout clamps a requested session timeout as a ZooKeeper server
// with this tick and the default bounds does: at least 2 ticks, at most 20
// (0 asks for the minimum).
func NegotiateTimeout(requested, tick time.Duration) time.Duration {
	return clampTimeout(requested, 2*tick, 20*tick)
}

// NegotiateTimeout clamps a requested session timeout as the server does:
// into [Config.MinSessionTimeout, Config.MaxSessionTimeout] (0 asks for
// the minimum).
func (s *Server) NegotiateTimeout(requested time.Duration) time.Duration {
	return clampTimeout(requested, s.cfg.MinSessionTimeout, s.cfg.MaxSessionTimeout)
}

// SessionTimeoutBounds returns Config.MinSessionTimeout and
// MaxSessionTimeout, defaults applied.
func (s *Server) SessionTimeoutBounds() (lo, hi time.Duration) {
	return s.cfg.MinSessionTimeout, s.cfg.MaxSessionTimeout
}

func clampTimeout(requested, lo, hi time.Duration) time.Duration {
	if requested < lo {
		return lo
	}
	if requested > hi {
		return hi
	}
	return requested
}

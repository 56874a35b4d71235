package conformance

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
)

// Target is what a case needs from the ZooKeeper under test: connections
// and a way to let deliveries happen. fakezk implements it with a
// deterministic server per case; zkadapter with a real server.
type Target interface {
	// NewConn returns a new, not yet started connection asking for the
	// given session timeout.
	NewConn(t testing.TB, timeout time.Duration) task.Conn
	// Settle lets everything pending be delivered: a deterministic fake runs
	// its scheduler until idle; a real server returns at once (the harness
	// then waits on the callbacks themselves).
	Settle()
}

// Optional capabilities. A case that needs one is skipped on a target that
// lacks it.
type (
	// Expirer expires c's session on the server.
	Expirer interface {
		Expire(t testing.TB, c task.Conn)
	}
	// Dropper breaks c's connection, applying requests in flight or not,
	// and lets it reconnect to the same session.
	Dropper interface {
		Drop(t testing.TB, c task.Conn, applied bool)
	}
	// InFlight holds requests between Do and the server applying them until
	// Settle, so that a case can drop a connection with requests in flight.
	InFlight interface {
		HoldsInFlight() bool
	}
	// Partitioner cuts c off for d (of the target's clock) and then lets it
	// reconnect; Advance moves the target's clock.
	Partitioner interface {
		Partition(t testing.TB, c task.Conn, d time.Duration)
		Advance(d time.Duration)
	}
	// CounterSetter sets a node's data version and cversion directly, to
	// check behaviour near int32's maximum without 2^31 writes.
	CounterSetter interface {
		SetCounters(t testing.TB, path string, version, cversion int32)
	}
	// Reaper is a target whose server deletes containers and TTL nodes as
	// ZooKeeper's ContainerManager does, configured as Reaping says.
	Reaper interface {
		Reaping() Reaping
	}
	// Clocked is a target whose clock the case moves (a fake server), for
	// cases that check when something happens, not only that it does.
	// Both moves fire what falls due and then settle the target.
	Clocked interface {
		Now() time.Time
		Advance(d time.Duration)
		// AdvanceToNext moves the clock to its earliest pending timer; it
		// reports false if there is none.
		AdvanceToNext() bool
	}
	// AuthTarget returns a new, not yet started connection that presents
	// auth (addAuth) on every connect before any request, so that its
	// sessions are authenticated from their first request on.
	AuthTarget interface {
		NewAuthConn(t testing.TB, timeout time.Duration, auth []task.AuthInfo) task.Conn
	}
)

// Reaping is how a server's ContainerManager is configured (the system
// properties znode.container.*, read once at start) and whether it has
// TTL nodes at all.
type Reaping struct {
	// CheckInterval is the period of its runs (checkIntervalMs).
	CheckInterval time.Duration
	// MaxPerMinute spaces a run's deletions a minute/MaxPerMinute apart.
	MaxPerMinute int
	// MaxNeverUsed, if positive, lets a run delete an empty container that
	// never had a child once this has passed since its mtime
	// (maxNeverUsedIntervalMs; 0 keeps them).
	MaxNeverUsed time.Duration
	// TTL says TTL nodes are enabled (zookeeper.extendedTypesEnabled).
	TTL bool
}

// Pause is how long a run waits after each deletion
// (ContainerManager.getMinIntervalMs: whole milliseconds).
func (r Reaping) Pause() time.Duration {
	if r.MaxPerMinute <= 0 {
		return 0
	}
	return time.Duration(60000/r.MaxPerMinute) * time.Millisecond
}

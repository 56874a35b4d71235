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
	// ContainerReaper removes empty containers that once had children now
	// (a real server does so every znode.container.checkIntervalMs).
	ContainerReaper interface {
		ReapContainers(t testing.TB)
	}
	// AuthTarget returns a new, not yet started connection that presents
	// auth (addAuth) on every connect before any request, so that its
	// sessions are authenticated from their first request on.
	AuthTarget interface {
		NewAuthConn(t testing.TB, timeout time.Duration, auth []task.AuthInfo) task.Conn
	}
)

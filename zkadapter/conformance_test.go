package zkadapter

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/internal/conformance"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// TestConformance runs the conformance cases (written against task.Conn,
// run on fakezk by its own tests) unchanged against a real server through
// this Conn: the differential check of fakezk against ZooKeeper. Cases
// needing a capability a real server cannot offer (setting counters,
// holding requests in flight, a controlled clock) are skipped by the
// harness.
func TestConformance(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	conformance.Run(t, func(tb testing.TB) conformance.Target {
		return &realTarget{addrs: srv.Addrs()}
	})
}

// TestConformanceReap runs the container manager and TTL cases against
// real servers with TTL nodes, each configured through the system
// properties the server reads its ContainerManager settings from: runs
// every 100ms; the same pausing 2s after each deletion (30 a minute), for
// the rate-limit case, which needs a pause no round trip spans; and
// never-used containers deleted once 300ms old, for the container cases.
func TestConformanceReap(t *testing.T) {
	all := func(conformance.Case) bool { return true }
	named := func(prefix string) func(conformance.Case) bool {
		return func(c conformance.Case) bool { return strings.HasPrefix(c.Name, prefix) }
	}
	for _, tc := range []struct {
		name  string
		rp    conformance.Reaping
		cases func(conformance.Case) bool
	}{
		{"interval-100ms", conformance.Reaping{CheckInterval: 100 * time.Millisecond, MaxPerMinute: 10000, TTL: true}, all},
		{"pause-2s", conformance.Reaping{CheckInterval: 100 * time.Millisecond, MaxPerMinute: 30, TTL: true}, named("reap/rate-limit")},
		{"never-used-300ms", conformance.Reaping{CheckInterval: 100 * time.Millisecond, MaxPerMinute: 10000, MaxNeverUsed: 300 * time.Millisecond, TTL: true},
			named("reap/container-")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := serverOpts
			opts.ExtendedTypes = true
			opts.SystemProperties = []string{
				fmt.Sprintf("znode.container.checkIntervalMs=%d", tc.rp.CheckInterval.Milliseconds()),
				fmt.Sprintf("znode.container.maxPerMinute=%d", tc.rp.MaxPerMinute),
				fmt.Sprintf("znode.container.maxNeverUsedIntervalMs=%d", tc.rp.MaxNeverUsed.Milliseconds()),
			}
			srv := zkserver.Standalone(t, opts)
			var cases []conformance.Case
			for _, c := range conformance.ReapCases() {
				if tc.cases(c) {
					cases = append(cases, c)
				}
			}
			conformance.RunCases(t, cases, func(tb testing.TB) conformance.Target {
				return &reapTarget{realTarget: &realTarget{addrs: srv.Addrs()}, rp: tc.rp}
			})
		})
	}
}

// reapTarget is a realTarget on a server whose container manager is
// configured as rp says.
type reapTarget struct {
	*realTarget
	rp conformance.Reaping
}

func (rt *reapTarget) Reaping() conformance.Reaping { return rt.rp }

// realTarget is a conformance.Target on a real server. It implements
// Expirer (Curator's KillSession: close the session from a second
// connection) and Dropper (close the client's TCP connection; it
// reconnects to the same session).
type realTarget struct {
	addrs []string

	mu    sync.Mutex
	conns map[*Conn]*dropDialer
}

func (rt *realTarget) NewConn(t testing.TB, timeout time.Duration) task.Conn {
	return rt.newConn(t, timeout, nil)
}

// newConn returns a connection that can be dropped, its Config adjusted
// by with (if not nil).
func (rt *realTarget) newConn(t testing.TB, timeout time.Duration, with func(*Config)) task.Conn {
	d := &dropDialer{}
	cfg := Config{Servers: rt.addrs, SessionTimeout: timeout, Dialer: d.dial}
	if tt, ok := t.(*testing.T); ok {
		cfg.Logger = testLogger(tt)
	}
	if with != nil {
		with(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rt.mu.Lock()
	if rt.conns == nil {
		rt.conns = make(map[*Conn]*dropDialer)
	}
	rt.conns[c] = d
	rt.mu.Unlock()
	return c
}

func (rt *realTarget) Settle() {}

func (rt *realTarget) Expire(t testing.TB, tc task.Conn) {
	t.Helper()
	c := tc.(*Conn)
	c.mu.Lock()
	id, passwd, server := c.hs.sessionID, c.hs.passwd, c.zc.Server()
	c.mu.Unlock()
	if err := killSession(server, id, passwd); err != nil {
		t.Fatalf("expire session %#x: %v", id, err)
	}
}

func (rt *realTarget) Drop(t testing.TB, tc task.Conn, applied bool) {
	rt.mu.Lock()
	d := rt.conns[tc.(*Conn)]
	rt.mu.Unlock()
	d.drop()
}

type dropDialer struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (d *dropDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, network, addr)
	if err == nil {
		d.mu.Lock()
		d.conns = append(d.conns, nc)
		d.mu.Unlock()
	}
	return nc, err
}

func (d *dropDialer) drop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, nc := range d.conns {
		nc.Close()
	}
	d.conns = nil
}

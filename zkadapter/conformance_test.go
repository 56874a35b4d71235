package zkadapter

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/internal/conformance"
	"github.com/zkflow/zkflow/internal/zkserver"
	"github.com/zkflow/zkflow/task"
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

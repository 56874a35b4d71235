package zkserver_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// client is a zkadapter.Conn with its events recorded.
type client struct {
	*zkadapter.Conn

	mu     sync.Mutex
	events []task.Event
	wake   chan struct{} // one slot: an event was recorded
}

// dial connects to servers, starts recording events and closes the Conn at
// the end of the test (before the servers stop: cleanups run last first).
func dial(t *testing.T, ctx context.Context, cfg zkadapter.Config) *client {
	t.Helper()
	conn, err := zkadapter.Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("dial %v: %v", cfg.Servers, err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &client{Conn: conn, wake: make(chan struct{}, 1)}
	if err := conn.Start(c.record); err != nil {
		t.Fatal(err)
	}
	return c
}

// record is a callback of the Conn (made one at a time) and never blocks.
func (c *client) record(ev task.Event) {
	c.mu.Lock()
	c.events = append(c.events, ev)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// waitState waits, until ctx ends, for the first session event with state
// st at index from or later, and returns it and the index after it.
func (c *client) waitState(t *testing.T, ctx context.Context, from int, st task.State) (task.Event, int) {
	t.Helper()
	for {
		c.mu.Lock()
		evs := c.events
		c.mu.Unlock()
		for i := from; i < len(evs); i++ {
			if evs[i].Type == task.EventNone && evs[i].State == st {
				return evs[i], i + 1
			}
		}
		select {
		case <-c.wake:
		case <-ctx.Done():
			t.Fatalf("no %v event after #%d; events %v", st, from, evs)
		}
	}
}

// do runs req and returns its response.
func (c *client) do(ctx context.Context, req task.Request, watch func(task.Event)) task.Response {
	ch := make(chan task.Response, 1)
	c.Do(req, func(r task.Response) { ch <- r }, watch)
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return task.Response{Err: ctx.Err()}
	}
}

// Partitioning the server a client is on, in a 3-server ensemble: the
// client suspends, resumes the same session on another server (its
// ephemeral kept), and cannot reach the partitioned server, which keeps
// serving on its direct address; after Heal a new client reaches it.
func TestPartitionMovesClient(t *testing.T) {
	zk := zkserver.Ensemble(t, 3, zkserver.Options{Proxied: true})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	addrs := zk.Addrs()
	if got, want := zk.ConnectString(), strings.Join(addrs, ","); got != want {
		t.Fatalf("ConnectString() = %q, want %q", got, want)
	}
	for i, a := range addrs {
		if s := zk.Server(i); a != s.Addr() || a == s.DirectAddr() || !strings.HasPrefix(a, "127.0.0.1:") {
			t.Fatalf("server %d: Addrs()[%d] = %s, Addr %s, DirectAddr %s; want a loopback proxy", i, i, a, s.Addr(), s.DirectAddr())
		}
	}

	servers, _, err := zkadapter.ParseConnectString(zk.ConnectString())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, ctx, zkadapter.Config{Servers: servers, SessionTimeout: 2 * time.Second})
	first, from := c.waitState(t, ctx, 0, task.StateConnected)
	if r := c.do(ctx, &task.CreateRequest{Path: "/mark", Mode: task.Ephemeral, ACL: task.OpenACL}, nil); r.Err != nil {
		t.Fatal(r.Err)
	}
	on, err := zk.ServerOf(ctx, first.SessionID)
	if err != nil {
		t.Fatal(err)
	}

	zk.Partition(on)
	_, from = c.waitState(t, ctx, from, task.StateSuspended)
	again, _ := c.waitState(t, ctx, from, task.StateConnected)
	if again.SessionID != first.SessionID {
		t.Fatalf("session %#x after the partition, want %#x resumed", again.SessionID, first.SessionID)
	}
	now, err := zk.ServerOf(ctx, first.SessionID)
	if err != nil || now == on {
		t.Fatalf("ServerOf after the move = %d, %v; want a server other than %d", now, err, on)
	}
	if r := c.do(ctx, &task.ExistsRequest{Path: "/mark"}, nil); r.Err != nil {
		t.Fatalf("the session's ephemeral after the move: %v", r.Err)
	}
	t.Logf("moved from server %d to %d", on, now)

	if m, err := zk.Server(on).Mode(ctx); err != nil {
		t.Fatalf("the partitioned server does not serve on its direct address: %v", err)
	} else {
		t.Logf("partitioned server %d is %s", on, m)
	}
	short, cancelShort := context.WithTimeout(ctx, 1500*time.Millisecond)
	_, err = zkadapter.Dial(short, zkadapter.Config{Servers: []string{zk.Server(on).Addr()}, SessionTimeout: time.Second})
	cancelShort()
	if !errors.Is(err, zkadapter.ErrNoSession) {
		t.Fatalf("dial of the partitioned server: %v; want ErrNoSession", err)
	}

	zk.Heal(on)
	healed := dial(t, ctx, zkadapter.Config{Servers: []string{zk.Server(on).Addr()}, SessionTimeout: 2 * time.Second})
	if got, err := zk.ServerOf(ctx, healed.SessionID()); err != nil || got != on {
		t.Fatalf("ServerOf(the new client) = %d, %v; want the healed server %d", got, err, on)
	}
	if r := healed.do(ctx, &task.ExistsRequest{Path: "/mark"}, nil); r.Err != nil {
		t.Fatalf("the first client's ephemeral, read on the healed server: %v", r.Err)
	}
}

// Partitioning a standalone server from its only client, for longer than
// the session timeout: the client suspends, the server (which an observer
// reaches on its direct address) expires the session, and after Heal the
// client learns of the expiry and opens a new session.
func TestPartitionStandaloneExpires(t *testing.T) {
	zk := zkserver.Standalone(t, zkserver.Options{Proxied: true})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	observer := dial(t, ctx, zkadapter.Config{Servers: []string{zk.Server(0).DirectAddr()}})
	c := dial(t, ctx, zkadapter.Config{Servers: zk.Addrs(), SessionTimeout: time.Second})
	first, from := c.waitState(t, ctx, 0, task.StateConnected)
	if r := c.do(ctx, &task.CreateRequest{Path: "/owned", Mode: task.Ephemeral, ACL: task.OpenACL}, nil); r.Err != nil {
		t.Fatal(r.Err)
	}
	gone := make(chan task.Event, 1)
	if r := observer.do(ctx, &task.ExistsRequest{Path: "/owned", Watch: true}, func(ev task.Event) { gone <- ev }); r.Err != nil {
		t.Fatal(r.Err)
	}

	zk.Partition(0)
	_, from = c.waitState(t, ctx, from, task.StateSuspended)
	select {
	case ev := <-gone:
		if ev.Type != task.EventNodeDeleted {
			t.Fatalf("observer's watch: %v; want the ephemeral deleted", ev)
		}
	case <-ctx.Done():
		t.Fatal("the server did not expire the partitioned session")
	}

	zk.Heal(0)
	_, from = c.waitState(t, ctx, from, task.StateExpired)
	next, _ := c.waitState(t, ctx, from, task.StateConnected)
	if next.SessionID == first.SessionID {
		t.Fatalf("session %#x after the expiry, want a new one", next.SessionID)
	}
}

// With TLS, the secure port is behind a proxy too: a TLS client connects
// through it, cannot while the server is partitioned, and can after Heal.
func TestPartitionSecurePort(t *testing.T) {
	zk := zkserver.Standalone(t, zkserver.Options{Proxied: true, TLS: true})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := zkadapter.Config{Servers: zk.SecureAddrs(), TLS: zk.CA().ClientConfig(), SessionTimeout: time.Second}
	dial(t, ctx, cfg)

	zk.Partition(0)
	short, cancelShort := context.WithTimeout(ctx, 1500*time.Millisecond)
	_, err := zkadapter.Dial(short, cfg)
	cancelShort()
	if !errors.Is(err, zkadapter.ErrNoSession) {
		t.Fatalf("TLS dial of the partitioned server: %v; want ErrNoSession", err)
	}
	zk.Heal(0)
	dial(t, ctx, cfg)
}

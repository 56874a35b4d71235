package election_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/framescan"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// notifySilence is a Dialer whose connection goes silent (as silence's)
// at the first watch notification it reads once armed: the client has read
// something from the server after the server last heard from it (its last
// ping), and then hears nothing more.
type notifySilence struct {
	mu      sync.Mutex
	armed   bool
	cut     bool
	pings   chan time.Time // the ping writes once armed
	cutAt   time.Time
	pingCut int // pings written after the cut (swallowed)
}

func (s *notifySilence) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	s.mu.Lock()
	cut := s.cut
	s.mu.Unlock()
	if cut {
		return nil, fmt.Errorf("partitioned from %s", addr)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &notifyConn{Conn: nc, s: s}, nil
}

type notifyConn struct {
	net.Conn
	s      *notifySilence
	wrote  bool // the connect request (no xid) went first
	rd, wr framescan.Scanner
	read   bool // the connect response (no xid) came first
	rdLeft int
}

func (c *notifyConn) Write(b []byte) (int, error) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.wrote {
		c.wr.Feed(b, func(xid int32) {
			if xid != framescan.Ping {
				return
			}
			switch {
			case s.cut:
				s.pingCut++
			case s.armed:
				select {
				case s.pings <- time.Now():
				default:
				}
			}
		})
	}
	c.wrote = true
	if s.cut {
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *notifyConn) Read(b []byte) (int, error) {
	for {
		n, err := c.Conn.Read(b)
		s := c.s
		s.mu.Lock()
		if s.cut {
			s.mu.Unlock()
			if err != nil {
				return n, err
			}
			continue // swallowed: the client hears nothing
		}
		p := b[:n]
		if !c.read {
			// The connect response: a length and its body, no xid.
			if c.rdLeft == 0 && len(p) >= 4 {
				c.rdLeft = int(binary.BigEndian.Uint32(p)) + 4
			}
			k := min(c.rdLeft, len(p))
			c.rdLeft -= k
			p = p[k:]
			c.read = c.rdLeft == 0 && k > 0
		}
		c.rd.Feed(p, func(xid int32) {
			if xid == framescan.Notification && s.armed && !s.cut {
				s.cut, s.cutAt = true, time.Now()
			}
		})
		s.mu.Unlock()
		return n, err
	}
}

// The give-up rule's margin is counted from when the server last heard
// from the leader, not from when the leader last read something: a watch
// notification read after the leader's last ping, then a silent partition
// before its next ping, must not keep the leader acting past the server's
// expiry of its session. The server last heard the ping; it expires the
// session a timeout later and elects the next candidate; the leader has
// stopped by then.
func TestRealSilentPartitionAfterANotification(t *testing.T) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, zkserver.Options{TickTime: 100 * time.Millisecond, MinSessionTimeout: 200 * time.Millisecond, MaxSessionTimeout: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := fmt.Sprintf("/real-election-notified-%d", time.Now().UnixNano())
	watched := dir + "-watched"
	const timeout = 6 * time.Second

	var (
		mu    sync.Mutex
		ended time.Time
	)
	sil := &notifySilence{pings: make(chan time.Time, 1)}
	conn, err := zkadapter.Dial(ctx, zkadapter.Config{Servers: srv.Addrs(), SessionTimeout: timeout, Dialer: sil.dial})
	if err != nil {
		t.Fatal(err)
	}
	exA, err := executor.New(executor.Config{Conn: conn, OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	doneA := make(chan struct{})
	go func() { defer close(doneA); exA.Run(context.Background()) }()
	defer func() { exA.Close(); <-doneA }()
	eA, _ := election.New(dir, election.WithOnState(func(_ *election.Leadership, st election.State) {
		if st == election.Ended {
			mu.Lock()
			ended = time.Now()
			mu.Unlock()
		}
	}))
	la, err := election.ClientOf(exA, eA).Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if la.Session().Timeout != timeout {
		t.Fatalf("negotiated timeout %s, want %s", la.Session().Timeout, timeout)
	}
	// A watch on A's session, for the notification.
	if _, err := executor.Await(ctx, exA, task.ExistsW(watched)); err != nil {
		t.Fatal(err)
	}
	exB, won, grantedAt := secondInLine(t, ctx, exA, srv.Addrs(), dir, timeout)
	// After A's next ping, and well before the one after it (a third of
	// the timeout later), B's create notifies A; A's connection goes silent
	// as it reads the notification. go-zookeeper's pings run on its own
	// wall-clock ticker: the wait places the notification between two of
	// them.
	sil.mu.Lock()
	sil.armed = true
	sil.mu.Unlock()
	var ping time.Time
	select {
	case ping = <-sil.pings:
	case <-ctx.Done():
		t.Fatal("A never pinged")
	}
	select {
	case <-time.After(time.Until(ping.Add(timeout / 3 * 7 / 10))):
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	if _, err := executor.Await(ctx, exB, task.Create(watched, nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	var lb *election.Leadership
	select {
	case lb = <-won:
	case <-ctx.Done():
		t.Fatal("B never elected")
	}
	<-la.Done()
	mu.Lock()
	defer mu.Unlock()
	granted := grantedAt()
	sil.mu.Lock()
	cutAt, pingCut := sil.cutAt, sil.pingCut
	sil.mu.Unlock()
	if cutAt.IsZero() {
		t.Fatal("A never read the notification")
	}
	if cutAt.After(ping.Add(timeout / 3)) {
		t.Fatalf("setup: the cut came %s after A's ping, after its next one was due", cutAt.Sub(ping))
	}
	t.Logf("after A's last ping heard: notification read and cut at %s, A ended at %s, B elected at %s (margin %s; %d pings swallowed); A's Err: %v",
		cutAt.Sub(ping).Round(time.Millisecond), ended.Sub(ping).Round(time.Millisecond),
		granted.Sub(ping).Round(time.Millisecond), granted.Sub(ended).Round(time.Millisecond), pingCut, la.Err())
	if lb == nil || !ended.Before(granted) {
		t.Fatalf("two acting leaders: A ended %s after B was elected", ended.Sub(granted))
	}
	if err := election.ClientOf(exB, nil).Resign(ctx, lb); err != nil {
		t.Fatal(err)
	}
}

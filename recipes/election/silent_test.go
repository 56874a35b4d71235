package election_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/zkadapter"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// silence is a Dialer whose connections can go silent: once cut, writes
// are swallowed and reads see nothing (the server hears no ping, the
// client no reply), and new dials fail. The hard case for the give-up
// rule: neither side is told, the client notices only when its read
// deadline passes.
type silence struct {
	mu  sync.Mutex
	cut bool
}

func (s *silence) isCut() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cut
}

func (s *silence) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if s.isCut() {
		return nil, fmt.Errorf("partitioned from %s", addr)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &silentConn{Conn: nc, s: s}, nil
}

type silentConn struct {
	net.Conn
	s *silence
}

func (c *silentConn) Write(b []byte) (int, error) {
	if c.s.isCut() {
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *silentConn) Read(b []byte) (int, error) {
	for {
		n, err := c.Conn.Read(b) // honours the read deadline go-zookeeper sets
		if err != nil || !c.s.isCut() {
			return n, err
		}
	}
}

// A leader silently partitioned from a real server gives up before the
// server expires its session and the next candidate is elected: on the
// wall clock (one process), its leadership ends before the next one
// starts.
func TestRealSilentPartition(t *testing.T) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, zkserver.Options{TickTime: 100 * time.Millisecond, MinSessionTimeout: 200 * time.Millisecond, MaxSessionTimeout: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := fmt.Sprintf("/real-election-silent-%d", time.Now().UnixNano())
	const timeout = 3 * time.Second

	var (
		mu        sync.Mutex
		ended     time.Time
		uncertain time.Time
	)
	sil := &silence{}
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
		mu.Lock()
		defer mu.Unlock()
		switch st {
		case election.Uncertain:
			if uncertain.IsZero() {
				uncertain = time.Now()
			}
		case election.Ended:
			ended = time.Now()
		}
	}))
	la, err := election.ClientOf(exA, eA).Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exB, won, grantedAt := secondInLine(t, ctx, exA, srv.Addrs(), dir, timeout)
	sil.mu.Lock()
	sil.cut = true
	sil.mu.Unlock()
	cut := time.Now()
	var lb *election.Leadership
	select {
	case lb = <-won:
	case <-ctx.Done():
		t.Fatal("B never elected")
	}
	<-la.Done()
	if !errors.Is(la.Err(), election.ErrGaveUp) {
		t.Errorf("A's Err = %v, want a give-up", la.Err())
	}
	mu.Lock()
	defer mu.Unlock()
	granted := grantedAt()
	t.Logf("negotiated timeout %s; after the cut: A uncertain at %s, gave up at %s, B elected at %s (margin %s)",
		la.Session().Timeout, uncertain.Sub(cut).Round(time.Millisecond), ended.Sub(cut).Round(time.Millisecond),
		granted.Sub(cut).Round(time.Millisecond), granted.Sub(ended).Round(time.Millisecond))
	if lb == nil || !ended.Before(granted) {
		t.Fatalf("two acting leaders: A gave up %s after B was elected", ended.Sub(granted))
	}
	if err := election.ClientOf(exB, nil).Resign(ctx, lb); err != nil {
		t.Fatal(err)
	}
}

// secondInLine starts candidate B's campaign on a client of its own and
// returns once B is in line behind A (two candidates in dir): won gets
// B's leadership, granted the instant it was first Leading.
func secondInLine(t *testing.T, ctx context.Context, exA *executor.Executor, addrs []string, dir string, timeout time.Duration) (exB *executor.Executor, won <-chan *election.Leadership, granted func() time.Time) {
	t.Helper()
	exB, _ = realClient(t, ctx, addrs, timeout)
	var (
		mu sync.Mutex
		at time.Time
	)
	eB, _ := election.New(dir, election.WithOnState(func(_ *election.Leadership, st election.State) {
		if st == election.Leading {
			mu.Lock()
			if at.IsZero() {
				at = time.Now()
			}
			mu.Unlock()
		}
	}))
	ch := make(chan *election.Leadership, 1)
	go func() {
		l, err := election.ClientOf(exB, eB).Campaign(ctx)
		if err != nil {
			t.Errorf("B: %v", err)
		}
		ch <- l
	}()
	for {
		names, err := executor.Await(ctx, exA, childrenOf(dir))
		if err != nil {
			t.Fatal(err)
		}
		if names == 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("B never queued")
		case <-time.After(20 * time.Millisecond): // polling the server, not ordering
		}
	}
	return exB, ch, func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return at
	}
}

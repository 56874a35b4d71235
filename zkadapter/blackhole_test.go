package zkadapter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/netproxy"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// proxied starts a proxy in front of every member of ens.
func proxied(t *testing.T, ens *zkserver.Cluster) netproxy.Group {
	t.Helper()
	g, err := netproxy.NewGroup(ens.Addrs()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// proxyOf is the index of the proxy c is connected through.
func proxyOf(t *testing.T, c *Conn, g netproxy.Group) int {
	t.Helper()
	c.mu.Lock()
	addr := c.zc.Server()
	c.mu.Unlock()
	for i, p := range g {
		if p.Addr() == addr {
			return i
		}
	}
	t.Fatalf("connected to %s, not through a proxy %v", addr, g.Addrs())
	return -1
}

// No request made on a session that ended is applied on another. The
// member the client is on goes silent while 40 ephemeral creates of 900 KB
// are under way (go-zookeeper's 16-slot queue fills and holds the rest);
// the next member in the client's rotation answers only after 2 s (a
// delaying proxy), by which time the servers have expired the session; the
// member after it opens the new session. go-zookeeper flushes its queue
// only when it comes back to the member it last had a session on, so it
// sends what it held on the new session: the Conn's guard refuses each of
// those writes, and no node is created, none owned by the new session,
// whatever each flow was told.
func TestBlackHoleNoRequestOutlivesItsSession(t *testing.T) {
	ens := zkserver.Ensemble(t, 3, serverOpts)
	g := proxied(t, ens)
	const timeout = 2 * time.Second
	c, r := open(t, Config{Servers: g.Addrs(), SessionTimeout: timeout})
	first, _ := r.waitState(t, 0, task.StateConnected, time.Second)
	direct, dr := open(t, Config{Servers: ens.Addrs(), SessionTimeout: 10 * time.Second})
	mustOK(t, do(t, direct, dr, &task.CreateRequest{Path: "/bh", Mode: task.Persistent, ACL: task.OpenACL}, nil))
	// The session's marker: gone when the servers have expired it.
	mustOK(t, do(t, c, r, &task.CreateRequest{Path: "/bh-marker", Mode: task.Ephemeral, ACL: task.OpenACL}, nil))
	gone := dr.watcher()
	// direct may be on another member: sync it past the marker's create
	// first (a follower's reads may lag the leader's commits).
	mustOK(t, do(t, direct, dr, &task.SyncRequest{Path: "/bh-marker"}, nil))
	mustOK(t, do(t, direct, dr, &task.ExistsRequest{Path: "/bh-marker", Watch: true}, gone))

	// Learn the client's rotation: cut its connection, see where it goes.
	i0 := proxyOf(t, c, g)
	g[i0].Reset()
	_, si := r.waitState(t, 0, task.StateSuspended, timeout)
	r.waitState(t, si, task.StateConnected, timeout)
	on := proxyOf(t, c, g) // the member it has its session on now
	next := 3 - i0 - on    // the one it tries after that
	last := i0             // and the one after that
	mustOK(t, do(t, c, r, &task.ExistsRequest{Path: "/bh"}, nil))

	g[on].Silence()
	g[last].Silence()
	g[next].Delay(2 * timeout)
	data := make([]byte, 900*1024)
	var outcomes []<-chan task.Response
	for i := range 40 {
		outcomes = append(outcomes, doAsync(c, r, &task.CreateRequest{Path: fmt.Sprintf("/bh/e-%02d", i), Data: data, Mode: task.Ephemeral, ACL: task.OpenACL}, nil))
	}
	if ev := gone.wait(t, 3*timeout+10*time.Second); ev.Type != task.EventNodeDeleted {
		t.Fatalf("marker event %v", ev)
	}
	g[last].Open()
	_, ei := r.waitState(t, 0, task.StateExpired, 30*time.Second)
	nextSess, _ := r.waitState(t, ei, task.StateConnected, 30*time.Second)
	applied := 0
	for i, ch := range outcomes {
		if resp := <-ch; resp.Err == nil {
			applied++
			t.Errorf("create %d succeeded on an expired session", i)
		}
	}
	// Let anything go-zookeeper still held reach the servers, then look.
	mustOK(t, do(t, c, r, &task.SyncRequest{Path: "/bh"}, nil))
	mustOK(t, do(t, direct, dr, &task.SyncRequest{Path: "/bh"}, nil))
	kids := mustOK(t, do(t, direct, dr, &task.GetChildrenRequest{Path: "/bh"}, nil)).Children
	for _, k := range kids {
		st := mustOK(t, do(t, direct, dr, &task.ExistsRequest{Path: "/bh/" + k}, nil)).Stat
		t.Errorf("/bh/%s exists, owned by %#x (new session %#x, old %#x)", k, st.EphemeralOwner, nextSess.SessionID, first.SessionID)
	}
	t.Logf("%d creates applied, %d nodes left", applied, len(kids))
}

// With a healthy quorum reachable, one silent member never costs the
// session: the client gives the silent connection up two-thirds of the
// session timeout after it last heard from it (go-zookeeper's read
// deadline), spends at most timeout/3 on each handshake with a member
// that accepts and says nothing, and resumes the same session on another
// member well within the timeout.
func TestBlackHoleOneMemberSessionSurvives(t *testing.T) {
	ens := zkserver.Ensemble(t, 3, serverOpts)
	g := proxied(t, ens)
	const timeout = 4 * time.Second
	c, r := open(t, Config{Servers: g.Addrs(), SessionTimeout: timeout})
	first, _ := r.waitState(t, 0, task.StateConnected, time.Second)
	createEphemeral(t, c, r, "/survivor")
	from := 0
	for round := range 3 { // the member it moves to is the next silenced
		i := proxyOf(t, c, g)
		start := time.Now()
		g[i].Silence()
		_, si := r.waitState(t, from, task.StateSuspended, timeout)
		again, ci := r.waitState(t, si, task.StateConnected, timeout)
		from = ci + 1
		took := time.Since(start)
		if again.SessionID != first.SessionID {
			t.Fatalf("round %d: session %#x, want %#x kept", round, again.SessionID, first.SessionID)
		}
		if took > timeout {
			t.Fatalf("round %d: %s to move on from the silent member (session timeout %s)", round, took, timeout)
		}
		t.Logf("round %d: moved from member %d to %d in %s", round, i, proxyOf(t, c, g), took.Round(time.Millisecond))
		mustOK(t, do(t, c, r, &task.ExistsRequest{Path: "/survivor"}, nil))
		g[i].Open()
	}

	// The member the client tries next is silent: it accepts the TCP
	// connection and never answers the handshake. The client gives it
	// timeout/3 and moves on. First learn the rotation: cut the current
	// connection and see where the client goes.
	i0 := proxyOf(t, c, g)
	g[i0].Reset()
	_, si := r.waitState(t, from, task.StateSuspended, timeout)
	_, ci := r.waitState(t, si, task.StateConnected, timeout)
	i1 := proxyOf(t, c, g)
	silent := 3 - i0 - i1
	g[silent].Silence()
	start := time.Now()
	g[i1].Reset()
	_, si = r.waitState(t, ci+1, task.StateSuspended, timeout)
	again, _ := r.waitState(t, si, task.StateConnected, timeout)
	took := time.Since(start)
	if again.SessionID != first.SessionID || proxyOf(t, c, g) != i0 {
		t.Fatalf("session %#x on member %d, want %#x on member %d", again.SessionID, proxyOf(t, c, g), first.SessionID, i0)
	}
	if g[silent].Accepted() == 0 {
		t.Fatal("the client never tried the silent member")
	}
	if limit := timeout/3 + time.Second; took > limit {
		t.Fatalf("%s to get past a silent member's handshake, want at most %s", took, limit)
	}
	t.Logf("past the silent member %d's handshake in %s", silent, took.Round(time.Millisecond))
	mustOK(t, do(t, c, r, &task.ExistsRequest{Path: "/survivor"}, nil))
	for _, ev := range r.sessionEvents() {
		if ev.State == task.StateExpired {
			t.Fatalf("session expired: %v", r.sessionEvents())
		}
	}
}

// One server that swallows a handshake does not cost the session either.
// ZooKeeper 3.8 does so to a connection made while it starts (see
// zkserver.Cluster.Restart); the session it loads expires a session
// timeout after it has loaded it. With one server the handshake bound is
// half the session timeout, not all of it, so the client dials again, and
// resumes, before that. Here the proxy swallows the first dial after the
// connection is lost, and the server's clock for the session starts at
// that loss (a request just before it).
func TestBlackHoleStandaloneSwallowedHandshake(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	g := proxied(t, srv)
	const timeout = 8 * time.Second
	c, r := open(t, Config{Servers: g.Addrs(), SessionTimeout: timeout})
	first, _ := r.waitState(t, 0, task.StateConnected, time.Second)
	createEphemeral(t, c, r, "/swallowed")
	n := g[0].Accepted()
	mustOK(t, do(t, c, r, &task.ExistsRequest{Path: "/swallowed"}, nil))
	g[0].Silence()
	g[0].Reset()
	_, si := r.waitState(t, 0, task.StateSuspended, timeout)
	waitAccepted(t, g[0], n+1, timeout) // the dial the server will never answer
	g[0].Open()
	again, _ := r.waitState(t, si, task.StateConnected, timeout)
	if again.SessionID != first.SessionID {
		t.Fatalf("session %#x after the swallowed handshake, want %#x resumed (events %v)", again.SessionID, first.SessionID, r.sessionEvents())
	}
	mustOK(t, do(t, c, r, &task.ExistsRequest{Path: "/swallowed"}, nil))
}

// Close on an established connection whose server went silent returns
// within 2 s (the close request gets no answer; the connection is then
// closed under go-zookeeper), as does executor.Run after its context ends.
func TestBlackHoleCloseBounded(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	g := proxied(t, srv)
	c, r := open(t, Config{Servers: g.Addrs(), SessionTimeout: 15 * time.Second})
	mustOK(t, do(t, c, r, &task.ExistsRequest{Path: "/"}, nil))
	g[0].Silence()
	pending := doAsync(c, r, &task.GetDataRequest{Path: "/"}, nil)
	start := time.Now()
	c.Close()
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Close took %s", took)
	}
	if resp := <-pending; resp.Err != task.ErrClosed {
		t.Fatalf("pending request: %v", resp.Err)
	}
}

// A client sees a watch event before the data that fired it, also after a
// reconnect with more watches than one SetWatches request carries: the
// Conn sends every SetWatches before any request made on the new
// connection. 12,000 data watches on paths of about 100 bytes take ten
// SetWatches requests; every node changes while the client is cut off;
// the session resumes on a new connection and the client reads every node
// at once; for every read that returns the new data, the node's
// NodeDataChanged was delivered before it.
func TestBlackHoleWatchesBeforeData(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	g := proxied(t, srv)
	const n = 12000
	c, r := open(t, Config{Servers: g.Addrs(), SessionTimeout: 10 * time.Second})
	direct, dr := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 10 * time.Second})
	dir := "/" + strings.Repeat("w", 80)
	mustOK(t, do(t, direct, dr, &task.CreateRequest{Path: dir, Mode: task.Persistent, ACL: task.OpenACL}, nil))
	paths := make([]string, n)
	all := func(cc *Conn, rr *recorder, req func(p string) task.Request) {
		var chs []<-chan task.Response
		for _, p := range paths {
			chs = append(chs, doAsync(cc, rr, req(p), nil))
		}
		for _, ch := range chs {
			mustOK(t, <-ch)
		}
	}
	for i := range paths {
		paths[i] = fmt.Sprintf("%s/node-%06d", dir, i)
	}
	all(direct, dr, func(p string) task.Request {
		return &task.CreateRequest{Path: p, Data: []byte("old"), Mode: task.Persistent, ACL: task.OpenACL}
	})

	// Delivery order: the Conn makes its callbacks one at a time, in order.
	var mu sync.Mutex
	seq := 0
	evAt := make(map[string]int)
	tick := func() int { seq++; return seq }
	var watched sync.WaitGroup
	for _, p := range paths {
		watched.Add(1)
		c.Do(&task.GetDataRequest{Path: p, Watch: true}, func(resp task.Response) {
			if resp.Err != nil {
				t.Errorf("get %s: %v", p, resp.Err)
			}
			watched.Done()
		}, func(ev task.Event) {
			mu.Lock()
			defer mu.Unlock()
			if ev.Type == task.EventNodeDataChanged {
				evAt[ev.Path] = tick()
			}
		})
	}
	watched.Wait()
	c.mu.Lock()
	packets := len(setWatches(c.watches, 0, c.watchesLimit()))
	c.mu.Unlock()
	if packets < 5 {
		t.Fatalf("%d SetWatches requests; the test needs many", packets)
	}

	g[0].Silence()
	all(direct, dr, func(p string) task.Request { return &task.SetDataRequest{Path: p, Data: []byte("new"), Version: -1} })
	g[0].Open()
	g[0].Reset() // the client sees its connection end and reconnects at once
	_, si := r.waitState(t, 0, task.StateSuspended, 10*time.Second)
	r.waitState(t, si, task.StateConnected, 10*time.Second)

	early, fresh := 0, 0
	var read sync.WaitGroup
	for _, p := range paths {
		read.Add(1)
		c.Do(&task.GetDataRequest{Path: p}, func(resp task.Response) {
			defer read.Done()
			if resp.Err != nil {
				t.Errorf("read %s: %v", p, resp.Err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			at := tick()
			if string(resp.Data) == "new" {
				fresh++
				if e, ok := evAt[p]; !ok || e > at {
					early++
				}
			}
		}, nil)
	}
	read.Wait()
	if early > 0 {
		t.Fatalf("%d of %d reads returned the new data before its NodeDataChanged", early, fresh)
	}
	if fresh != n {
		t.Fatalf("%d reads saw the new data, want %d", fresh, n)
	}
	t.Logf("%d SetWatches requests; %d reads, each after its event", packets, fresh)
}

// waitAccepted waits until p has accepted n connections.
func waitAccepted(t *testing.T, p *netproxy.Proxy, n int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for p.Accepted() < n {
		if time.Now().After(deadline) {
			t.Fatalf("proxy %s accepted %d connections in %s, want %d", p.Addr(), p.Accepted(), d, n)
		}
		time.Sleep(time.Millisecond) // polling a counter, not ordering events
	}
}

// executor.Run returns within 2 s after its context ends while the server
// it is connected to has gone silent, with a flow waiting on it.
func TestBlackHoleRunReturnsBounded(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	g := proxied(t, srv)
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer dcancel()
	c, err := Dial(dctx, Config{Servers: g.Addrs(), SessionTimeout: 15 * time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	e, err := executor.New(executor.Config{Conn: c})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- e.Run(ctx) }()
	if _, err := executor.Await(context.Background(), e, task.Exists("/")); err != nil {
		t.Fatal(err)
	}
	g[0].Silence()
	got := make(chan error, 1)
	executor.Submit(e, task.Get("/"), func(_ task.Data, err error) { got <- err })
	start := time.Now()
	cancel()
	if err := <-ran; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Run took %s to return after cancel", took)
	}
	if err := <-got; err == nil {
		t.Fatal("the flow succeeded against a silent server")
	}
}

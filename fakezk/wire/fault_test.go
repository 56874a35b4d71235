package wire_test

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/wire"
	"github.com/zkflow/zkflow/task"
)

// TestPartitionResumesSession: fakezk's Partition cuts a go-zookeeper
// client's TCP connection and refuses its reconnects until it heals on the
// server's clock; the client then resumes the same session, and a watch it
// set before fires for a change made while it was away (its SetWatches).
// Drop cuts the connection the same way and lets it back at once.
func TestPartitionResumesSession(t *testing.T) {
	clk := fakezk.NewClock(time.Time{})
	r := start(t, fakezk.Config{Clock: clk, TickTime: time.Second})
	c, events := r.dial(t)
	other, _ := r.dial(t)
	id := c.SessionID()
	if _, err := c.Create("/eph", nil, gozk.FlagEphemeral, open); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create("/d", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	_, _, w, err := c.GetW("/d")
	if err != nil {
		t.Fatal(err)
	}
	fc := r.zk.SessionConn(id)
	if fc == nil {
		t.Fatal("no Conn for the session")
	}
	r.zk.Partition(fc, time.Second, false) // less than the 2s timeout
	waitState(t, events, gozk.StateDisconnected)
	if _, err := other.Set("/d", []byte("while away"), -1); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := other.Exists("/eph"); !ok {
		t.Fatal("the ephemeral went while its session lives")
	}
	clk.Advance(time.Second) // heals
	waitState(t, events, gozk.StateHasSession)
	if c.SessionID() != id {
		t.Fatalf("session %#x after the reconnect, was %#x", c.SessionID(), id)
	}
	if ev := waitEvent(t, w); ev.Type != gozk.EventNodeDataChanged || ev.Path != "/d" {
		t.Fatalf("watch after the reconnect: %+v", ev)
	}

	r.zk.Drop(fc, false)
	waitState(t, events, gozk.StateDisconnected)
	waitState(t, events, gozk.StateHasSession)
	if c.SessionID() != id {
		t.Fatalf("session %#x after a drop, was %#x", c.SessionID(), id)
	}
	if _, _, err := c.Get("/d"); err != nil {
		t.Fatalf("get after a drop: %v", err)
	}
}

// TestExpire: fakezk's Expire ends a go-zookeeper client's session: its
// ephemeral goes, the client sees StateExpired and its watch ends, then it
// opens a new session by itself.
func TestExpire(t *testing.T) {
	r := start(t, fakezk.Config{})
	c, events := r.dial(t)
	other, _ := r.dial(t)
	id := c.SessionID()
	if _, err := c.Create("/eph", nil, gozk.FlagEphemeral, open); err != nil {
		t.Fatal(err)
	}
	_, _, w, err := c.ExistsW("/never")
	if err != nil {
		t.Fatal(err)
	}
	r.zk.Expire(r.zk.SessionConn(id))
	waitState(t, events, gozk.StateExpired)
	if ev := waitEvent(t, w); ev.Err != gozk.ErrSessionExpired {
		t.Fatalf("watch at the expiry: %+v", ev)
	}
	waitState(t, events, gozk.StateHasSession)
	if c.SessionID() == id || c.SessionID() == 0 {
		t.Fatalf("session %#x after the expiry", c.SessionID())
	}
	if ok, _, _ := other.Exists("/eph"); ok {
		t.Fatal("the expired session's ephemeral is still there")
	}
}

// TestExpiryOnTheServersClock: with a fakezk.Clock the test decides when
// a disconnected session expires: the server counts its timeout from the
// moment the link closed, on its own clock.
func TestExpiryOnTheServersClock(t *testing.T) {
	clk := fakezk.NewClock(time.Time{})
	r := start(t, fakezk.Config{Clock: clk, TickTime: time.Second})
	c := r.rawConn(t)
	s := c.session(2 * time.Second)
	c.nc.Close()
	// Wait (bounded) until the server has seen the link close: the
	// session's expiry timer is then armed on the fake clock.
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for clk.Pending() == 0 || r.zk.SessionConn(s.SessionID).Connected() {
		select {
		case <-deadline.C:
			t.Fatal("the server never saw the link close")
		case <-r.detached: // a connection closed: look again
		}
	}
	clk.Advance(2*time.Second - time.Millisecond)
	if r.zk.SessionConn(s.SessionID) == nil {
		t.Fatal("expired before its timeout")
	}
	c2 := r.rawConn(t)
	if resp, err := c2.connect(wire_req(s)); err != nil || resp.SessionID != s.SessionID {
		t.Fatalf("resume within the timeout: %+v %v", resp, err)
	}
	c2.nc.Close()
	for r.zk.SessionConn(s.SessionID).Connected() {
		select {
		case <-deadline.C:
			t.Fatal("the server never saw the second link close")
		case <-r.detached:
		}
	}
	clk.Advance(2 * time.Second)
	if r.zk.SessionConn(s.SessionID) != nil {
		t.Fatal("not expired after its timeout")
	}
	c3 := r.rawConn(t)
	if resp, err := c3.connect(wire_req(s)); err != nil || resp.SessionID != 0 || !c3.closed() {
		t.Fatalf("resume after the expiry: %+v %v", resp, err)
	}
}

// TestSilentClientLosesLink: a client that sends nothing (no ping) for its
// session timeout loses its link, as a real server drops a session that
// stopped pinging; its session's countdown runs on the server's clock from
// the last packet, and this fake clock has not moved, so it can still come
// back (on the real clock it has expired:
// TestSilentClientExpiresOnTheRealClock).
func TestSilentClientLosesLink(t *testing.T) {
	clk := fakezk.NewClock(time.Time{})
	r := start(t, fakezk.Config{Clock: clk, TickTime: 100 * time.Millisecond})
	c := r.rawConn(t)
	s := c.session(200 * time.Millisecond)
	if !c.closed() {
		t.Fatal("a silent client kept its link")
	}
	c2 := r.rawConn(t)
	if resp, err := c2.connect(wire_req(s)); err != nil || resp.SessionID != s.SessionID {
		t.Fatalf("resume after the silent spell: %+v %v", resp, err)
	}
}

// TestRestart: while the server is down every link is closed and every
// connection refused; when it is up again the go-zookeeper client resumes
// its session, its ephemeral still there.
func TestRestart(t *testing.T) {
	clk := fakezk.NewClock(time.Time{})
	r := start(t, fakezk.Config{Clock: clk, TickTime: time.Second})
	c, events := r.dial(t)
	id := c.SessionID()
	if _, err := c.Create("/eph", nil, gozk.FlagEphemeral, open); err != nil {
		t.Fatal(err)
	}
	r.zk.Restart(time.Minute)
	waitState(t, events, gozk.StateDisconnected)
	probe := r.rawConn(t)
	probe.write((&wire.ConnectRequest{TimeOut: 2000, Passwd: make([]byte, 16)}).Encode(nil))
	if !probe.closed() {
		t.Fatal("a connection was served while the server is down")
	}
	clk.Advance(time.Minute)
	waitState(t, events, gozk.StateHasSession)
	if c.SessionID() != id {
		t.Fatalf("session %#x after the restart, was %#x", c.SessionID(), id)
	}
	if ok, _, err := c.Exists("/eph"); !ok || err != nil {
		t.Fatalf("the ephemeral after the restart: %v %v", ok, err)
	}
}

// TestDelay: Delay holds a session's replies on the server's clock; they
// come, in order, when it passes.
func TestDelay(t *testing.T) {
	clk := fakezk.NewClock(time.Time{})
	r := start(t, fakezk.Config{Clock: clk, TickTime: time.Second})
	c := r.rawConn(t)
	s := c.session(20 * time.Second)
	r.zk.Delay(r.zk.SessionConn(s.SessionID), time.Second)
	for xid := int32(1); xid <= 2; xid++ {
		c.write((&wire.Request{Xid: xid, Op: wire.OpExists, Path: "/"}).Encode(nil))
	}
	c.nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond)) // a bound on a negative check
	if b, err := c.read(); err == nil {
		t.Fatalf("a reply while delayed: %x", b)
	}
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	clk.Advance(time.Second)
	for xid := int32(1); xid <= 2; xid++ {
		b, err := c.read()
		if err != nil {
			t.Fatal(err)
		}
		if h, _, _ := wire.DecodeReplyHeader(b); h.Xid != xid || h.Err != 0 {
			t.Fatalf("reply %+v, want xid %d", h, xid)
		}
	}
}

// TestWipe: after a total loss the server refuses, with no response, a
// client that saw later zxids than its own; one that presents lastZxid 0
// learns its session expired.
func TestWipe(t *testing.T) {
	r := start(t, fakezk.Config{})
	c := r.rawConn(t)
	s := c.session(time.Second)
	for i := range 3 {
		c.call(wire.Request{Op: wire.OpCreate, Path: fmt.Sprint("/n", i), ACL: task.OpenACL})
	}
	seen := r.zk.Zxid()
	r.zk.Wipe()
	if !c.closed() {
		t.Fatal("the link survived the wipe")
	}
	behind := r.rawConn(t)
	req := wire_req(s)
	req.LastZxidSeen = seen
	if _, err := behind.connect(req); !errors.Is(err, io.EOF) {
		t.Fatalf("a client ahead of the wiped server: %v", err)
	}
	waived := r.rawConn(t)
	if resp, err := waived.connect(wire_req(s)); err != nil || resp.SessionID != 0 || !waived.closed() {
		t.Fatalf("the old session after the wipe: %+v %v", resp, err)
	}
}

// TestAsyncAndDeterministicServers: an Async server serves the wire as an
// automatic one does; a deterministic one, which only Step moves, refuses
// every session (the connection closes with no response).
func TestAsyncAndDeterministicServers(t *testing.T) {
	r := start(t, fakezk.Config{Async: true})
	c, _ := r.dial(t)
	if _, err := c.Create("/a", []byte("x"), 0, open); err != nil {
		t.Fatal(err)
	}
	if d, _, err := c.Get("/a"); err != nil || string(d) != "x" {
		t.Fatalf("get: %q %v", d, err)
	}
	det := start(t, fakezk.Config{Deterministic: true})
	raw := det.rawConn(t)
	if _, err := raw.connect(wire.ConnectRequest{TimeOut: 1000, Passwd: make([]byte, 16)}); !errors.Is(err, io.EOF) {
		t.Fatalf("a deterministic server took a session: %v", err)
	}
}

// TestExpiryCountsFromTheLastPacket: as a real server, the fake counts a
// session's timeout from the last packet it heard from the client, not
// from the end of its link: a client last heard 3 s before its link
// closed, with a 4 s timeout, is expired 1 s after the close.
func TestExpiryCountsFromTheLastPacket(t *testing.T) {
	clk := fakezk.NewClock(time.Time{})
	r := start(t, fakezk.Config{Clock: clk, TickTime: time.Second})
	c := r.rawConn(t)
	s := c.session(4 * time.Second)
	clk.Advance(time.Second)
	if h, _, _ := c.call(wire.Request{Op: wire.OpExists, Path: "/"}); h.Err != 0 {
		t.Fatalf("exists: %d", h.Err)
	}
	clk.Advance(3 * time.Second) // nothing heard from the client meanwhile
	c.nc.Close()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for r.zk.SessionConn(s.SessionID) != nil && r.zk.SessionConn(s.SessionID).Connected() {
		select {
		case <-deadline.C:
			t.Fatal("the server never saw the link close")
		case <-r.detached:
		}
	}
	clk.Advance(time.Second - time.Millisecond)
	if r.zk.SessionConn(s.SessionID) == nil {
		t.Fatal("expired before its timeout after the last packet")
	}
	clk.Advance(time.Millisecond)
	if r.zk.SessionConn(s.SessionID) != nil {
		t.Fatal("not expired a timeout after the last packet heard: the countdown started at the link's end")
	}
}

// TestSilentClientExpiresOnTheRealClock: on the real clock a client that
// sends nothing for its session timeout has its session expired when it
// loses its link, as on a real server; it cannot resume it.
func TestSilentClientExpiresOnTheRealClock(t *testing.T) {
	r := start(t, fakezk.Config{Clock: task.RealClock(), TickTime: 100 * time.Millisecond})
	c := r.rawConn(t)
	s := c.session(200 * time.Millisecond)
	if !c.closed() {
		t.Fatal("a silent client kept its link")
	}
	c2 := r.rawConn(t)
	if resp, err := c2.connect(wire_req(s)); err != nil || resp.SessionID != 0 {
		t.Fatalf("resume after a silent spell as long as the timeout: %+v %v, want session 0 (expired)", resp, err)
	}
}

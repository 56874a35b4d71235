package wire_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/wire"
)

// A session resumed with a connect request asking another timeout takes
// the newly negotiated one on a 3.8.0 server: the connect response says
// so (the fake's too), and the session expires that long after its
// client was last heard (processConnectRequest sets the connection's
// timeout; touchSession counts the expiry with it). Seen on Debian's
// 3.8.0: a session opened with 2s and resumed asking 20s, its connection
// closed, is still alive 5s later. The fake told the client 20s but
// expired the session on its first 2s (fakezk.Server.Resume took no
// timeout), so a client that believed the response lost its session.
func TestResumedSessionTakesTheNegotiatedTimeout(t *testing.T) {
	clk := fakezk.NewClock(time.Time{})
	r := start(t, fakezk.Config{Clock: clk, TickTime: time.Second})
	c := r.rawConn(t)
	s := c.session(2 * time.Second)
	c.nc.Close()
	waitDetached(t, r, s.SessionID)

	c2 := r.rawConn(t)
	resp, err := c2.connect(wire.ConnectRequest{TimeOut: 20000, SessionID: s.SessionID, Passwd: s.Passwd})
	if err != nil || resp.SessionID != s.SessionID || resp.TimeOut != 20000 {
		t.Fatalf("resume asking 20s: %+v %v", resp, err)
	}
	c2.nc.Close()
	waitDetached(t, r, s.SessionID)
	clk.Advance(5 * time.Second) // within the 20s the client was told
	if r.zk.SessionConn(s.SessionID) == nil {
		t.Fatal("the session expired 5s after its link closed; its connect response gave it 20s (3.8.0 keeps it)")
	}
}

// waitDetached waits (bounded, real time) until the server has seen the
// session's link close.
func waitDetached(t *testing.T, r *rig, id int64) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for r.zk.SessionConn(id) != nil && r.zk.SessionConn(id).Connected() {
		select {
		case <-deadline.C:
			t.Fatal("the server never saw the link close")
		case <-r.detached:
		}
	}
}

package zkadapter

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// doc.go: "a silent server is given up two-thirds of the session timeout
// after it was last heard from"; PROTOCOL.md: "so with a healthy quorum
// reachable one silent member never costs the session". The server goes
// silent (no byte read or written: a black hole); a little later, still
// inside the two-thirds, the session writes more than the socket buffers
// hold. go-zookeeper's receive loop gives the connection up on time, but
// its send loop is blocked in a Write whose deadline is two-thirds of the
// timeout after that Write began, and StateDisconnected (and the next
// connection) wait for it. The proxy lets new connections through at
// once: the server is reachable all along. Before the fix the connection
// was given up at 7 s of a 6 s timeout and the session expired; now a
// failed read closes the socket, which ends the blocked Write.
func TestSilentServerWithWritesGivenUpInTime(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	g := proxied(t, srv)
	const timeout = 6 * time.Second
	c, r := open(t, Config{Servers: g.Addrs(), SessionTimeout: timeout})
	first, _ := r.waitState(t, 0, task.StateConnected, time.Second)
	mustOK(t, do(t, c, r, &task.CreateRequest{Path: "/silent", Mode: task.Persistent, ACL: task.OpenACL}, nil))
	mustOK(t, do(t, c, r, &task.ExistsRequest{Path: "/silent"}, nil)) // heard from just now
	start := time.Now()
	g[0].Silence()
	g[0].Open()             // new connections pass: the server stays reachable
	time.Sleep(timeout / 2) // not an ordering: the Write must begin well after the last read (a real server's wall clock)
	data := make([]byte, 900*1024)
	var outcomes []<-chan task.Response
	for range 40 { // 36 MB: more than the socket buffers hold
		outcomes = append(outcomes, doAsync(c, r, &task.SetDataRequest{Path: "/silent", Data: data, Version: -1}, nil))
	}
	_, si := r.waitState(t, 0, task.StateSuspended, 3*timeout)
	suspended := time.Since(start)
	again, _ := r.waitState(t, si, task.StateConnected, 3*timeout)
	t.Logf("suspended %s after the server went silent; then %v", suspended.Round(time.Millisecond), r.sessionEvents())
	for _, ch := range outcomes {
		<-ch
	}
	if limit := 2*timeout/3 + time.Second; suspended > limit {
		t.Errorf("the silent connection was given up %s after the server was last heard from, want at most %s (2/3 of the session timeout)",
			suspended.Round(time.Millisecond), limit)
	}
	if again.SessionID != first.SessionID {
		t.Errorf("session %#x after the silent member, want %#x kept (events %v)", again.SessionID, first.SessionID, r.sessionEvents())
	}
}

package zkadapter

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/internal/framescan"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// pingEater is a Dialer whose first connection never delivers a ping: the
// server hears nothing from the client after its last request, while
// everything the server sends still arrives.
type pingEater struct{ dials atomic.Int32 }

func (p *pingEater) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil || p.dials.Add(1) > 1 {
		return nc, err
	}
	return &pingEaten{Conn: nc}, nil
}

type pingEaten struct {
	net.Conn
	wrote bool
	wr    framescan.Scanner
}

func (c *pingEaten) Write(b []byte) (int, error) {
	ping := false
	if c.wrote {
		c.wr.Feed(b, func(xid int32) { ping = ping || xid == framescan.Ping })
	}
	c.wrote = true
	if ping {
		return len(b), nil // go-zookeeper writes one frame per Write
	}
	return c.Conn.Write(b)
}

// A server that hears nothing from the client expires its session a
// timeout after the last request; the notifications it sends meanwhile
// are no sign that it heard anything. The Conn counts from the last ping
// the server answered: it gives the connection up two-thirds of the
// timeout after it, while notifications keep coming, in time to resume
// the session on a new connection. Counting from the last bytes read (as
// go-zookeeper does) the connection looked alive until the server expired
// the session.
func TestUnansweredPingsGiveUpTheConnectionWhileNotificationsCome(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	var p pingEater
	const timeout = 3 * time.Second
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: timeout, Dialer: p.dial})
	first, _ := r.waitState(t, 0, task.StateConnected, 10*time.Second)
	other, or := open(t, Config{Servers: srv.Addrs(), SessionTimeout: timeout})
	mustOK(t, do(t, other, or, &task.CreateRequest{Path: "/eaten", Mode: task.Persistent, ACL: task.OpenACL}, nil))
	rw := &watcher{r: r, ch: make(chan task.Event, 1024)}
	mustOK(t, do(t, c, r, &task.AddWatchRequest{Path: "/eaten", Mode: task.WatchPersistentRecursive}, rw))
	start := time.Now() // the server last heard c's AddWatch no earlier than this

	// A change every 100 ms: c reads a notification at least that often.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				do(t, other, or, &task.SetDataRequest{Path: "/eaten", Version: -1}, nil)
			}
		}
	}()
	_, si := r.waitState(t, 0, task.StateSuspended, 3*timeout)
	suspended := time.Since(start)
	again, _ := r.waitState(t, si, task.StateConnected, 3*timeout)
	close(stop)
	<-done
	t.Logf("suspended %s after the last request the server heard (%d notifications read); then %v",
		suspended.Round(time.Millisecond), len(rw.ch), r.sessionEvents())
	if limit := 2*timeout/3 + timeout/6; suspended > limit {
		t.Errorf("the connection was given up %s after the server last heard from the client, want at most %s (2/3 of the session timeout and a margin)",
			suspended.Round(time.Millisecond), limit)
	}
	if again.SessionID != first.SessionID {
		t.Errorf("session %#x after the connection was given up, want %#x resumed (events %v)", again.SessionID, first.SessionID, r.sessionEvents())
	}
}

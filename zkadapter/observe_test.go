package zkadapter

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// connFacts records what a Conn tells its Observer.
type connFacts struct {
	mu  sync.Mutex
	evs []task.ConnEvent
}

func (f *connFacts) observer() *task.Observer {
	return &task.Observer{OnConn: func(ev task.ConnEvent) {
		f.mu.Lock()
		f.evs = append(f.evs, ev)
		f.mu.Unlock()
	}}
}

func (f *connFacts) of(kind task.ConnEventKind) []task.ConnEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []task.ConnEvent
	for _, ev := range f.evs {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// A dial that fails is an attempt with its error; a server that is not
// ZooKeeper is an attempt that connected, then a failed handshake.
func TestObserverDialFailures(t *testing.T) {
	l := listen(t)
	closed := l.Addr().String()
	l.Close()
	var f connFacts
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := Dial(ctx, Config{Servers: []string{closed}, Logger: testLogger(t), Observer: f.observer()}); err == nil {
		t.Fatal("Dial of a closed port succeeded")
	}
	at := f.of(task.ConnAttempt)
	if len(at) == 0 || at[0].Server != closed || at[0].Err == nil {
		t.Fatalf("attempts %+v, want a failed one to %s", at, closed)
	}

	addr := acceptEach(t, listen(t), func(nc net.Conn) {
		nc.Write([]byte("HTTP/1.0 400 Bad Request\r\n\r\n"))
		nc.Close()
	})
	var g connFacts
	ctx2, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	if _, err := Dial(ctx2, Config{Servers: []string{addr}, Logger: testLogger(t), Observer: g.observer()}); err == nil {
		t.Fatal("Dial of a server that is not ZooKeeper succeeded")
	}
	at, hs := g.of(task.ConnAttempt), g.of(task.ConnHandshakeFailed)
	if len(at) == 0 || at[0].Err != nil || at[0].Server != addr {
		t.Fatalf("attempts %+v, want one that connected to %s", at, addr)
	}
	if len(hs) == 0 || hs[0].Server != addr || !strings.Contains(hs[0].Err.Error(), "handshake") {
		t.Fatalf("handshake failures %+v", hs)
	}
}

// On a real server: the session established on the server dialed, the
// same session resumed after a partition (Reconnect), and requests that
// find go-zookeeper's queue full reported as spilled.
func TestObserverSession(t *testing.T) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, serverOpts)
	p := &partitioner{}
	var f connFacts
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 8 * time.Second, Dialer: p.dial, Observer: f.observer()})
	first, _ := r.waitState(t, 0, task.StateConnected, 10*time.Second)
	est := f.of(task.ConnEstablished)
	if len(est) != 1 || est[0].Session != first.SessionID || est[0].Reconnect || est[0].Server != srv.Addrs()[0] {
		t.Fatalf("established %+v, want session %#x on %s", est, first.SessionID, srv.Addrs()[0])
	}
	p.partition()
	_, si := r.waitState(t, 0, task.StateSuspended, 10*time.Second)
	p.heal()
	r.waitState(t, si, task.StateConnected, 10*time.Second)
	est = f.of(task.ConnEstablished)
	if len(est) != 2 || est[1].Session != first.SessionID || !est[1].Reconnect {
		t.Fatalf("established %+v, want the session resumed", est)
	}

	// 2,000 requests from one goroutine at once: go-zookeeper's queue
	// holds 16, so some spill.
	const n = 2000
	var wg sync.WaitGroup
	wg.Add(n)
	for range n {
		c.Do(&task.ExistsRequest{Path: "/"}, func(task.Response) { wg.Done() }, nil)
	}
	wg.Wait()
	sp := f.of(task.ConnSpill)
	if len(sp) == 0 {
		t.Fatal("no request spilled")
	}
	for i, ev := range sp {
		if ev.Depth < 1 || ev.Session != first.SessionID {
			t.Fatalf("spill %d: %+v", i, ev)
		}
	}
}

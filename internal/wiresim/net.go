package wiresim

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkflow/zkflow/zkadapter"
)

// cutConn is a client's TCP connection that a CutMidFrame or
// CutAfterFrame fault closes at its next write.
type cutConn struct {
	net.Conn
	armed atomic.Int32 // 0, or 1+the Class to inject at the next write
	fired func(Class)
}

var errCut = errors.New("wiresim: connection cut by the fault plan")

func (c *cutConn) Write(b []byte) (int, error) {
	a := c.armed.Swap(0)
	if a == 0 {
		return c.Conn.Write(b)
	}
	switch cl := Class(a - 1); cl {
	case CutMidFrame:
		n, _ := c.Conn.Write(b[:len(b)/2])
		c.Conn.Close()
		c.fired(cl)
		return n, errCut
	default: // CutAfterFrame
		n, err := c.Conn.Write(b)
		c.Conn.Close()
		c.fired(cl)
		return n, err
	}
}

// links keeps each client's current TCP connection, for the cut faults,
// and the server's side of every connection, for StallRead.
type links struct {
	mu     sync.Mutex
	cur    []*cutConn
	server []*stallConn
}

// stallListener is the server's listener: every connection it accepts can
// be stalled.
type stallListener struct {
	net.Listener
	r *Run
}

func (l *stallListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc := &stallConn{Conn: nc, r: l.r}
	l.r.links.mu.Lock()
	l.r.links.server = append(l.r.links.server, sc)
	l.r.links.mu.Unlock()
	return sc, nil
}

// stallConn is the server's side of a client's connection. While a
// StallRead fault holds it, a read that has data returns it only when the
// stall ends (or the run does), whether the connection was closed
// meanwhile or not: the server has read the bytes and not yet looked at
// them.
type stallConn struct {
	net.Conn
	r     *Run
	mu    sync.Mutex
	until time.Time // the end of the stall, on the run's clock
}

func (c *stallConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.mu.Lock()
	wait := c.until.Sub(c.r.clock.Now())
	c.mu.Unlock()
	if n > 0 && wait > 0 {
		up, t := c.r.timer(wait)
		select {
		case <-up:
		case <-c.r.ending:
		}
		t.Stop()
	}
	return n, err
}

// stall holds the server's reads of client i's current connection for d;
// false if it has none.
func (r *Run) stall(i int, d time.Duration) bool {
	r.links.mu.Lock()
	defer r.links.mu.Unlock()
	cc := r.links.cur[i]
	if cc == nil {
		return false
	}
	addr := cc.LocalAddr().String()
	for _, sc := range r.links.server {
		if sc.RemoteAddr().String() == addr {
			sc.mu.Lock()
			sc.until = r.clock.Now().Add(d)
			sc.mu.Unlock()
			return true
		}
	}
	return false
}

// dialer returns client i's zkadapter.Dialer: a plain TCP dial whose
// connection a cut fault can close.
func (r *Run) dialer(i int) zkadapter.Dialer {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		nc, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cc := &cutConn{Conn: nc, fired: r.countFired}
		r.links.mu.Lock()
		r.links.cur[i] = cc
		r.links.mu.Unlock()
		return cc, nil
	}
}

// arm makes client i's current connection cut at its next write; false
// if it has none.
func (r *Run) arm(i int, c Class) bool {
	r.links.mu.Lock()
	defer r.links.mu.Unlock()
	cc := r.links.cur[i]
	if cc == nil {
		return false
	}
	cc.armed.Store(int32(c) + 1)
	return true
}

package wiresim

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"

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

// links keeps each client's current TCP connection, for the cut faults.
type links struct {
	mu  sync.Mutex
	cur []*cutConn
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

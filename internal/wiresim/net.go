package wiresim

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkflow/zkflow/zkadapter"
)

// cutConn is a client's TCP connection that a CutMidFrame or
// CutAfterFrame fault closes at its next write, and whose reads a Silence
// fault holds.
type cutConn struct {
	quietConn
	armed atomic.Int32 // 0, or 1+the Class to inject at the next write
	fired func(Class)
}

func (c *cutConn) Read(b []byte) (int, error) {
	if err := c.quiet.wait(); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

// quietConn is a connection whose reads a Silence fault holds (silence):
// it tells the silence of its read deadlines and of its end.
type quietConn struct {
	net.Conn
	quiet silence
}

func (c *quietConn) SetReadDeadline(t time.Time) error {
	c.quiet.setDeadline(t)
	return c.Conn.SetReadDeadline(t)
}

func (c *quietConn) SetDeadline(t time.Time) error {
	c.quiet.setDeadline(t)
	return c.Conn.SetDeadline(t)
}

func (c *quietConn) Close() error {
	c.quiet.close()
	return c.Conn.Close()
}

// silence holds one side's reads while a Silence fault lasts: a Read
// waits before reading, as on a path that delivers nothing, and fails
// with a timeout when the connection's read deadline passes first, or
// with net.ErrClosed once the connection is closed, as a socket read
// would; what the other side wrote meanwhile is read after. The run's
// clock is the real one, as the deadlines are.
type silence struct {
	r         *Run
	mu        sync.Mutex
	until     time.Time // the end of the Silence
	deadline  time.Time // the read deadline (zero: none)
	closed    chan struct{}
	closeOnce sync.Once
}

func newSilence(r *Run) silence { return silence{r: r, closed: make(chan struct{})} }

func (s *silence) hold(d time.Duration) {
	s.mu.Lock()
	s.until = s.r.clock.Now().Add(d)
	s.mu.Unlock()
}

func (s *silence) setDeadline(t time.Time) {
	s.mu.Lock()
	s.deadline = t
	s.mu.Unlock()
}

func (s *silence) close() { s.closeOnce.Do(func() { close(s.closed) }) }

func (s *silence) wait() error {
	for {
		s.mu.Lock()
		until, dl := s.until, s.deadline
		s.mu.Unlock()
		wait := until.Sub(s.r.clock.Now())
		if wait <= 0 {
			return nil
		}
		timedOut := false
		if !dl.IsZero() {
			left := time.Until(dl)
			if left <= 0 {
				return os.ErrDeadlineExceeded
			}
			if left < wait {
				wait, timedOut = left, true
			}
		}
		up, t := s.r.timer(wait)
		select {
		case <-up:
			if timedOut {
				return os.ErrDeadlineExceeded
			}
		case <-s.closed:
			t.Stop()
			return net.ErrClosed
		case <-s.r.ending:
			t.Stop()
			return nil
		}
	}
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
		c.Close()
		c.fired(cl)
		return n, errCut
	default: // CutAfterFrame
		n, err := c.Conn.Write(b)
		c.Close()
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
	sc := &stallConn{quietConn: quietConn{Conn: nc, quiet: newSilence(l.r)}, r: l.r}
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
	quietConn // a Silence: the server hears nothing
	r         *Run
	mu        sync.Mutex
	until     time.Time // the end of the stall, on the run's clock
}

func (c *stallConn) Read(b []byte) (int, error) {
	if err := c.quiet.wait(); err != nil {
		return 0, err
	}
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

// stall holds the server's reads of client i's current connection for d
// (StallRead), or, with both, silences it: neither side reads anything
// for d (Silence); false if it has none.
func (r *Run) stall(i int, d time.Duration, both bool) bool {
	r.links.mu.Lock()
	defer r.links.mu.Unlock()
	cc := r.links.cur[i]
	if cc == nil {
		return false
	}
	addr := cc.LocalAddr().String()
	for _, sc := range r.links.server {
		if sc.RemoteAddr().String() == addr {
			if both {
				cc.quiet.hold(d)
				sc.quiet.hold(d)
				return true
			}
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
		cc := &cutConn{quietConn: quietConn{Conn: nc, quiet: newSilence(r)}, fired: r.countFired}
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

package netproxy

import (
	"io"
	"net"
	"sync"
	"time"
)

const (
	readSize  = 32 << 10 // bytes a reader asks for per read
	queueSize = 4 << 20  // bytes a direction may hold before its reader waits
)

// link is one accepted connection and, once dialled, its connection to the
// target. Its fields other than stop are guarded by p.mu.
//
// A forwarded link runs a reader and a writer per direction (pipe), joined
// by a queue. Every way a link ends goes through stop, closed once:
// silenceLocked (deadlines in the past wake the readers and any write in
// progress; the sockets stay open), cutLocked (the sockets are closed) or
// the end of both directions (run closes the sockets). A goroutine that
// sees stop closed returns without touching the sockets, so nothing it
// does after Silence can reach a peer.
type link struct {
	p        *Proxy
	client   *net.TCPConn
	server   *net.TCPConn // nil until dialled
	silenced bool
	cut      bool // sockets closed by Reset, Close or an error
	stop     chan struct{}
	stopOnce sync.Once
}

func (l *link) halt() { l.stopOnce.Do(func() { close(l.stop) }) }

func (l *link) halted() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

// silenceLocked freezes the link: its goroutines return and its sockets
// stay open, unread and unwritten.
func (l *link) silenceLocked() {
	if l.silenced || l.cut {
		return
	}
	l.silenced = true
	l.halt() // before the deadlines: a reader woken by them must see stop
	past := time.Unix(1, 0)
	for _, c := range l.conns() {
		_ = c.SetDeadline(past)
	}
}

// cutLocked closes both sockets with an RST and forgets the link.
func (l *link) cutLocked() {
	if l.cut {
		return
	}
	l.cut = true
	l.halt()
	for _, c := range l.conns() {
		reset(c)
	}
	delete(l.p.links, l)
}

// abort cuts the link after an error on one side, unless it is silenced
// (the RST would cross the partition).
func (l *link) abort() {
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	if !l.silenced {
		l.cutLocked()
	}
}

func (l *link) conns() []*net.TCPConn {
	if l.server == nil {
		return []*net.TCPConn{l.client}
	}
	return []*net.TCPConn{l.client, l.server}
}

// run dials the target, forwards both directions until both have ended,
// and closes the link unless it was silenced meanwhile.
func (l *link) run() {
	p := l.p
	defer p.wg.Done()
	var d net.Dialer
	server, err := d.DialContext(p.ctx, "tcp", p.target)
	p.mu.Lock()
	switch {
	case l.cut:
		if err == nil {
			reset(server.(*net.TCPConn))
		}
		p.mu.Unlock()
		return
	case l.silenced:
		if err == nil {
			l.server = server.(*net.TCPConn) // held, unread, until Reset or Close
		}
		p.mu.Unlock()
		return
	case err != nil:
		l.cutLocked() // the client sees an RST, as for a refused connection
		p.mu.Unlock()
		return
	}
	l.server = server.(*net.TCPConn)
	p.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(4)
	l.pipe(&wg, l.client, l.server)
	l.pipe(&wg, l.server, l.client)
	wg.Wait()

	p.mu.Lock()
	if !l.silenced && !l.cut {
		l.cut = true
		l.halt()
		for _, c := range l.conns() {
			_ = c.Close() // both directions ended with a FIN: close normally
		}
		delete(p.links, l)
	}
	p.mu.Unlock()
}

// pipe starts the reader and the writer of one direction, src to dst.
func (l *link) pipe(wg *sync.WaitGroup, src, dst *net.TCPConn) {
	q := newQueue()
	go func() {
		defer wg.Done()
		l.read(src, q)
	}()
	go func() {
		defer wg.Done()
		l.write(dst, q)
	}()
}

// read copies what src sends into q, each chunk stamped with when it is
// due. It ends on src's EOF or error, queueing it to be passed on after
// the data, or when the link stops.
func (l *link) read(src *net.TCPConn, q *queue) {
	buf := make([]byte, readSize)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			data := make([]byte, n) // the copy that lets reading go on
			copy(data, buf[:n])
			if !q.push(chunk{data: data, due: l.p.due()}, l.stop) {
				return
			}
		}
		if err != nil {
			if !l.halted() {
				q.push(chunk{err: err, due: l.p.due()}, l.stop)
			}
			return
		}
	}
}

// write writes each chunk of q to dst when it is due. On the source's EOF
// it half-closes dst (the FIN passes on); on an error, its own or the
// source's, it cuts the link.
func (l *link) write(dst *net.TCPConn, q *queue) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		c, ok := q.pop(l.stop)
		if !ok {
			return
		}
		if !c.due.IsZero() && !waitUntil(c.due, l.stop, &timer) {
			return
		}
		switch {
		case c.err == io.EOF:
			l.p.mu.Lock() // ordered with Silence: no FIN after it
			if !l.halted() {
				_ = dst.CloseWrite()
			}
			l.p.mu.Unlock()
			return
		case c.err != nil:
			l.abort()
			return
		case l.halted():
			return
		}
		// Silence between the check and the write sets a write deadline
		// in the past, which fails this write.
		if _, err := dst.Write(c.data); err != nil {
			if !l.halted() {
				l.abort()
			}
			return
		}
	}
}

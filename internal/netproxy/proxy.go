package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards the TCP connections it accepts on a loopback address to
// one target. Its methods are safe from any goroutine and none of them
// blocks on the network: each acts on the connections open when it is
// called and returns.
type Proxy struct {
	target string
	ln     *net.TCPListener
	ctx    context.Context // cancelled by Close: ends dials in progress
	cancel context.CancelFunc
	delay  atomic.Int64 // time.Duration added to every chunk

	mu        sync.Mutex
	silent    bool // new connections are silenced at accept
	closed    bool
	links     map[*link]struct{}
	accepted  int
	acceptErr error // why the accept loop ended, if not Close

	wg        sync.WaitGroup // the accept loop and every link.run
	closeOnce sync.Once
	closeErr  error
}

// New listens on 127.0.0.1 on a port of the system's choosing and forwards
// every connection it accepts to target, dialled once per accepted
// connection. The proxy starts open, with no delay.
func New(target string) (*Proxy, error) {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("netproxy: listen for %s: %w", target, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		target: target,
		ln:     ln,
		ctx:    ctx,
		cancel: cancel,
		links:  make(map[*link]struct{}),
	}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the address clients dial instead of the target, "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Silence black-holes every connection open now and every connection
// accepted until Open: nothing passes in either direction, no FIN, no RST,
// and the connections stay open until Reset or Close. See the package
// documentation for the model.
func (p *Proxy) Silence() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.silent = true
	for l := range p.links {
		l.silenceLocked()
	}
}

// Open lets connections accepted from now on through again. Connections
// silenced before stay silent.
func (p *Proxy) Open() {
	p.mu.Lock()
	p.silent = false
	p.mu.Unlock()
}

// Reset closes every connection open now, silenced or not, on both sides,
// with an RST. Whether new connections pass is unchanged.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.links {
		l.cutLocked()
	}
}

// ResetSilenced closes every connection silenced now, as Reset does, and
// leaves the forwarded ones alone. After Open, it ends what a partition
// left behind (its connections stay silent forever otherwise) without
// touching connections accepted since: the peers of a silenced
// connection learn, by the RST, that it is dead, as they would once a
// real network healed and one of them wrote to the other.
func (p *Proxy) ResetSilenced() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.links {
		if l.silenced {
			l.cutLocked()
		}
	}
}

// Delay adds d to every chunk read from now on, in each direction, on
// every connection. Zero (or a negative d) removes the delay.
func (p *Proxy) Delay(d time.Duration) {
	p.delay.Store(int64(max(d, 0)))
}

// Conns is the number of connections the proxy holds open: forwarded ones,
// until both peers have closed or one has reset, and silenced ones, until
// Reset or Close. After a partition, Accepted tells a new connection better.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Accepted is the number of connections the proxy has accepted since New.
// A test waits for it to grow to know that a client has (re)connected.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// Close stops accepting, resets every connection as Reset does and waits
// until every goroutine the proxy started has returned. It returns the
// error that closing the listener gave, or the error that ended accepting
// earlier (too many open files, say), if any. Calls after the first return
// the same error.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		for l := range p.links {
			l.cutLocked()
		}
		p.mu.Unlock()
		err := p.ln.Close()
		p.cancel()
		p.wg.Wait()
		p.closeErr = errors.Join(err, p.acceptErr) // acceptErr is final after Wait
	})
	return p.closeErr
}

// serve is the accept loop; it returns when the listener fails, which
// Close makes it do.
func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.AcceptTCP()
		if err != nil {
			p.mu.Lock()
			if !p.closed {
				p.acceptErr = fmt.Errorf("netproxy: accept on %s: %w", p.Addr(), err)
			}
			p.mu.Unlock()
			return
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			reset(c)
			return
		}
		p.accepted++
		l := &link{p: p, client: c, stop: make(chan struct{})}
		p.links[l] = struct{}{}
		if p.silent {
			l.silenceLocked() // no dial: the server never hears of it
			p.mu.Unlock()
			continue
		}
		p.wg.Add(1)
		p.mu.Unlock()
		go l.run()
	}
}

// due is when a chunk read now is to be written; zero when there is no
// delay (which spares a clock reading per chunk).
func (p *Proxy) due() time.Time {
	d := time.Duration(p.delay.Load())
	if d == 0 {
		return time.Time{}
	}
	return time.Now().Add(d)
}

// reset closes c with an RST.
func reset(c *net.TCPConn) {
	_ = c.SetLinger(0)
	_ = c.Close()
}

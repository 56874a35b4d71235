package netproxy_test

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkflow/zkflow/internal/netproxy"
)

// bound is the generous upper bound on anything a test waits for: the
// tests share their machine with others, sometimes at a load of ten per
// CPU.
const bound = 30 * time.Second

// quiet is how long a test waits to see that nothing arrives.
const quiet = 300 * time.Millisecond

// server is a scripted TCP server on loopback: it hands each connection
// it accepts to the test, which reads and writes it by hand.
type server struct {
	ln    *net.TCPListener
	conns chan *net.TCPConn
	done  chan struct{} // closed by close: the accept loop stops handing over
	once  sync.Once
	wg    sync.WaitGroup

	mu  sync.Mutex
	all []*net.TCPConn
}

func newServer(t *testing.T) *server {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s := &server{ln: ln, conns: make(chan *net.TCPConn, 16), done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.AcceptTCP()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.all = append(s.all, c)
			s.mu.Unlock()
			select {
			case s.conns <- c:
			case <-s.done:
				return
			}
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *server) addr() string { return s.ln.Addr().String() }

// close stops accepting, closes every connection and waits for the
// accept loop. Calls after the first do nothing.
func (s *server) close() {
	s.once.Do(func() {
		close(s.done)
		s.ln.Close()
		s.wg.Wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.all {
			c.Close()
		}
	})
}

// accept is the next connection the server accepted.
func (s *server) accept(t *testing.T) *net.TCPConn {
	t.Helper()
	select {
	case c := <-s.conns:
		return c
	case <-time.After(bound):
		t.Fatalf("server %s: no connection within %v", s.addr(), bound)
		return nil
	}
}

// accepted is how many connections the server has accepted.
func (s *server) accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.all)
}

// newEcho starts a server that writes back what it reads and half-closes
// after the client's EOF.
func newEcho(t *testing.T) string {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		all []*net.TCPConn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.AcceptTCP()
			if err != nil {
				return
			}
			mu.Lock()
			all = append(all, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				io.Copy(c, c)
				c.CloseWrite()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range all {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func newProxy(t *testing.T, target string) *netproxy.Proxy {
	t.Helper()
	p, err := netproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

func dial(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, bound)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// send writes msg on c and reads exactly it on peer.
func send(t *testing.T, c, peer net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("write %q: %v", msg, err)
	}
	got := make([]byte, len(msg))
	peer.SetReadDeadline(time.Now().Add(bound))
	if _, err := io.ReadFull(peer, got); err != nil {
		t.Fatalf("read %q: %v", msg, err)
	}
	if string(got) != msg {
		t.Fatalf("read %q, want %q", got, msg)
	}
}

// nothing checks that c receives nothing, not even an EOF or an RST, for
// a while: its read ends at its deadline.
func nothing(t *testing.T, c net.Conn, who string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(quiet))
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: read %q, %v; want nothing until the deadline", who, buf[:n], err)
	}
}

// isReset checks that a read on c fails at once with an RST.
func isReset(t *testing.T, c net.Conn, who string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(bound))
	_, err := c.Read(make([]byte, 64))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("%s: read error %v, want a connection reset", who, err)
	}
}

// waitFor polls cond until it holds, failing the test after bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("not within %v: %s", bound, what)
		}
	}
}

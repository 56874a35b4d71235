package netproxy_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/internal/netproxy"
)

// TestPassThrough sends a large random payload through the proxy to an
// echo server and back, on several connections at once, with and without
// a delay: every byte comes back, in order, and the client's FIN travels
// to the server and the server's back, after which the proxy forgets the
// connection.
func TestPassThrough(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration
	}{
		{"direct", 0},
		{"delayed", 5 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seed [32]byte
			binary.LittleEndian.PutUint64(seed[:], rand.Uint64())
			t.Logf("seed %d", binary.LittleEndian.Uint64(seed[:]))
			rng := rand.NewChaCha8(seed)
			p := newProxy(t, newEcho(t))
			p.Delay(tc.delay)

			const conns, size = 3, 1 << 20
			errc := make(chan error, conns)
			for range conns {
				payload := make([]byte, size)
				rng.Read(payload)
				c := dial(t, p.Addr())
				c.SetDeadline(time.Now().Add(bound))
				go func() {
					// The writer half: write everything, then a FIN.
					go func() {
						if _, err := c.Write(payload); err == nil {
							c.CloseWrite()
						}
					}()
					got, err := io.ReadAll(c) // ends with the echo's FIN
					switch {
					case err != nil:
						errc <- err
					case !bytes.Equal(got, payload):
						errc <- errors.New("echoed payload differs")
					default:
						errc <- nil
					}
				}()
			}
			for range conns {
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, "the proxy forgets finished connections", func() bool { return p.Conns() == 0 })
			if got := p.Accepted(); got != conns {
				t.Errorf("Accepted() = %d, want %d", got, conns)
			}
		})
	}
}

// TestSilenceEstablished partitions an established connection: nothing
// passes either way, and neither side learns anything, not even that the
// other closed.
func TestSilenceEstablished(t *testing.T) {
	s := newServer(t)
	p := newProxy(t, s.addr())
	c := dial(t, p.Addr())
	sc := s.accept(t)
	send(t, c, sc, "ping") // nothing in flight from here on
	send(t, sc, c, "pong")

	p.Silence()
	if _, err := c.Write([]byte("lost from the client")); err != nil {
		t.Fatalf("client write while silent: %v", err)
	}
	if _, err := sc.Write([]byte("lost from the server")); err != nil {
		t.Fatalf("server write while silent: %v", err)
	}
	nothing(t, c, "client")
	nothing(t, sc, "server")

	sc.Close() // the FIN (or RST: unread data) is lost in the partition
	nothing(t, c, "client after the server closed")
	if _, err := c.Write([]byte("still lost")); err != nil {
		t.Fatalf("client write after the server closed: %v", err)
	}
	if got := p.Conns(); got != 1 {
		t.Errorf("Conns() = %d, want 1 (a silenced connection stays open)", got)
	}
}

// TestSilenceNewConnection connects while the proxy is silent: the client
// is accepted, but the server never hears of it and nothing comes back.
func TestSilenceNewConnection(t *testing.T) {
	s := newServer(t)
	p := newProxy(t, s.addr())
	p.Silence()
	c := dial(t, p.Addr())
	waitFor(t, "the proxy accepts", func() bool { return p.Accepted() == 1 })
	if _, err := c.Write([]byte("hello?")); err != nil {
		t.Fatalf("client write: %v", err)
	}
	nothing(t, c, "client")
	if got := s.accepted(); got != 0 {
		t.Errorf("the server accepted %d connections, want 0", got)
	}
	if got := p.Conns(); got != 1 {
		t.Errorf("Conns() = %d, want 1", got)
	}
}

// TestOpen heals a partition: a new connection passes, the one silenced
// before stays dead.
func TestOpen(t *testing.T) {
	s := newServer(t)
	p := newProxy(t, s.addr())
	old := dial(t, p.Addr())
	oldS := s.accept(t)
	send(t, old, oldS, "before")

	p.Silence()
	during := dial(t, p.Addr())
	waitFor(t, "the proxy accepts", func() bool { return p.Accepted() == 2 })
	p.Open()

	c := dial(t, p.Addr())
	sc := s.accept(t)
	send(t, c, sc, "hello")
	send(t, sc, c, "world")

	if _, err := old.Write([]byte("after")); err != nil {
		t.Fatal(err)
	}
	if _, err := oldS.Write([]byte("after")); err != nil {
		t.Fatal(err)
	}
	nothing(t, old, "client silenced when established")
	nothing(t, oldS, "its server side")
	nothing(t, during, "client accepted while silent")
	if got := s.accepted(); got != 2 {
		t.Errorf("the server accepted %d connections, want 2", got)
	}
	if got := p.Conns(); got != 3 {
		t.Errorf("Conns() = %d, want 3", got)
	}
}

// TestReset cuts connections in each state: the client, and the server
// where there is one, see an RST at once, and the proxy holds nothing.
func TestReset(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup returns the client's connection and the server's (nil if
		// the server never saw it).
		setup func(t *testing.T, p *netproxy.Proxy, s *server) (c, sc net.Conn)
	}{
		{"forwarding", func(t *testing.T, p *netproxy.Proxy, s *server) (net.Conn, net.Conn) {
			c := dial(t, p.Addr())
			sc := s.accept(t)
			send(t, c, sc, "up")
			return c, sc
		}},
		{"silenced", func(t *testing.T, p *netproxy.Proxy, s *server) (net.Conn, net.Conn) {
			c := dial(t, p.Addr())
			sc := s.accept(t)
			send(t, c, sc, "up")
			p.Silence()
			return c, sc
		}},
		{"accepted while silent", func(t *testing.T, p *netproxy.Proxy, s *server) (net.Conn, net.Conn) {
			p.Silence()
			c := dial(t, p.Addr())
			waitFor(t, "the proxy accepts", func() bool { return p.Accepted() == 1 })
			return c, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t)
			p := newProxy(t, s.addr())
			c, sc := tc.setup(t, p, s)
			p.Reset()
			isReset(t, c, "client")
			if sc != nil {
				isReset(t, sc, "server")
			}
			if got := p.Conns(); got != 0 {
				t.Errorf("Conns() = %d after Reset, want 0", got)
			}
		})
	}
}

// TestResetSilenced heals a partition and ends what it left behind: the
// connection silenced before Open is reset on both sides, the one
// accepted after Open goes on passing.
func TestResetSilenced(t *testing.T) {
	s := newServer(t)
	p := newProxy(t, s.addr())
	old := dial(t, p.Addr())
	oldS := s.accept(t)
	send(t, old, oldS, "before")

	p.Silence()
	p.Open()
	c := dial(t, p.Addr())
	sc := s.accept(t)
	send(t, c, sc, "hello")

	p.ResetSilenced()
	isReset(t, old, "client silenced before Open")
	isReset(t, oldS, "its server side")
	send(t, c, sc, "still here")
	send(t, sc, c, "and back")
	if got := p.Conns(); got != 1 {
		t.Errorf("Conns() = %d after ResetSilenced, want 1", got)
	}
}

// TestTargetDown: when the target refuses the proxy's dial, the client's
// accepted connection is reset. On loopback the RST can come before the
// client's connect has returned, which then fails with it.
func TestTargetDown(t *testing.T) {
	s := newServer(t)
	target := s.addr()
	s.close()
	p := newProxy(t, target)
	c, err := net.DialTimeout("tcp", p.Addr(), bound)
	if err == nil {
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(bound))
		_, err = c.Read(make([]byte, 1))
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("client: %v, want a connection reset", err)
	}
	waitFor(t, "the proxy accepts", func() bool { return p.Accepted() == 1 })
	waitFor(t, "the proxy forgets the connection", func() bool { return p.Conns() == 0 })
}

// TestDelay checks the lower bound of a one-way delay in each direction
// and of a round trip, with the real clock; the upper bounds are only
// there to end the test.
func TestDelay(t *testing.T) {
	const d = 100 * time.Millisecond
	s := newServer(t)
	p := newProxy(t, s.addr())
	c := dial(t, p.Addr())
	sc := s.accept(t)
	send(t, c, sc, "warm") // the link is dialled and forwarding

	p.Delay(d)
	oneWay := func(from, to net.Conn, msg string) time.Duration {
		start := time.Now()
		send(t, from, to, msg)
		return time.Since(start)
	}
	if got := oneWay(c, sc, "to the server"); got < d {
		t.Errorf("client to server took %v, want at least %v", got, d)
	}
	if got := oneWay(sc, c, "to the client"); got < d {
		t.Errorf("server to client took %v, want at least %v", got, d)
	}

	p.Delay(0)
	send(t, c, sc, "undelayed") // the delay is gone: just check it passes
	send(t, sc, c, "undelayed")
}

// TestDelayRoundTrip: a round trip through an echo server takes at least
// twice the delay.
func TestDelayRoundTrip(t *testing.T) {
	const d = 50 * time.Millisecond
	p := newProxy(t, newEcho(t))
	p.Delay(d)
	c := dial(t, p.Addr())
	start := time.Now()
	send(t, c, c, "echo")
	if got := time.Since(start); got < 2*d {
		t.Errorf("round trip took %v, want at least %v", got, 2*d)
	}
}

// TestDelayChange: removing the delay does not let a later chunk overtake
// one still held for the old delay.
func TestDelayChange(t *testing.T) {
	s := newServer(t)
	p := newProxy(t, s.addr())
	c := dial(t, p.Addr())
	sc := s.accept(t)
	send(t, c, sc, "warm")

	p.Delay(200 * time.Millisecond)
	if _, err := c.Write([]byte("first,")); err != nil {
		t.Fatal(err)
	}
	p.Delay(0)
	if _, err := c.Write([]byte("second")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len("first,second"))
	sc.SetReadDeadline(time.Now().Add(bound))
	if _, err := io.ReadFull(sc, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != "first,second" {
		t.Fatalf("server read %q, want %q", got, "first,second")
	}
}

// TestSilenceDropsDelayed: a chunk the proxy holds for its delay when
// Silence comes is dropped, not delivered. The delay is long enough that
// Silence comes well before the chunk is due.
func TestSilenceDropsDelayed(t *testing.T) {
	const d = time.Second
	s := newServer(t)
	p := newProxy(t, s.addr())
	c := dial(t, p.Addr())
	sc := s.accept(t)
	send(t, c, sc, "warm")

	p.Delay(d)
	if _, err := c.Write([]byte("in flight")); err != nil {
		t.Fatal(err)
	}
	p.Silence()
	sc.SetReadDeadline(time.Now().Add(d + quiet))
	buf := make([]byte, 64)
	if n, err := sc.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("server: read %q, %v; want nothing until the deadline", buf[:n], err)
	}
}

// TestClose closes a proxy holding a connection in every state: Close
// returns, every client sees its connection fail, and no goroutine is
// left behind.
func TestClose(t *testing.T) {
	s := newServer(t)
	before := goleak.IgnoreCurrent()
	p, err := netproxy.New(s.addr())
	if err != nil {
		t.Fatal(err)
	}

	silenced := dial(t, p.Addr())
	send(t, silenced, s.accept(t), "up")
	p.Silence()
	during := dial(t, p.Addr())
	waitFor(t, "the proxy accepts", func() bool { return p.Accepted() == 2 })
	p.Open()

	forwarding := dial(t, p.Addr())
	send(t, forwarding, s.accept(t), "up")

	blocked := dial(t, p.Addr()) // its server never reads: the proxy's queue fills
	s.accept(t)
	wrote := make(chan error, 1)
	go func() {
		_, err := blocked.Write(make([]byte, 16<<20)) // fails when Close cuts it
		wrote <- err
	}()

	delayed := dial(t, p.Addr())
	send(t, delayed, s.accept(t), "up")
	p.Delay(time.Hour)
	if _, err := delayed.Write([]byte("queued")); err != nil {
		t.Fatal(err)
	}

	waitFor(t, "the proxy accepts", func() bool { return p.Accepted() == 5 })

	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(bound):
		t.Fatalf("Close did not return within %v", bound)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for _, c := range []net.Conn{forwarding, silenced, during} {
		isReset(t, c, "client")
	}
	for _, c := range []net.Conn{delayed, blocked} {
		// Unread data on the client may turn the RST into a failed write
		// first; a read fails either way.
		c.SetReadDeadline(time.Now().Add(bound))
		if _, err := c.Read(make([]byte, 64)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("client read after Close: %v, want a failure", err)
		}
	}
	if err := <-wrote; err == nil {
		t.Error("a 16 MiB write to a server that never reads succeeded")
	}
	if got := p.Conns(); got != 0 {
		t.Errorf("Conns() = %d after Close, want 0", got)
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), bound); err == nil {
		t.Error("dial after Close succeeded")
	}
	goleak.VerifyNone(t, before)
}

// TestGroup gives each server of a three-server "ensemble" its proxy and
// partitions one of them.
func TestGroup(t *testing.T) {
	servers := []*server{newServer(t), newServer(t), newServer(t)}
	var targets []string
	for _, s := range servers {
		targets = append(targets, s.addr())
	}
	g, err := netproxy.NewGroup(targets...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := g.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	addrs := g.Addrs()
	if len(addrs) != len(servers) {
		t.Fatalf("Addrs() = %v, want %d addresses", addrs, len(servers))
	}
	g[1].Silence()
	for i, addr := range addrs {
		if addr != g[i].Addr() || g[i].Target() != targets[i] {
			t.Errorf("proxy %d: Addr %s, Target %s; Addrs()[%d] = %s, target %s", i, g[i].Addr(), g[i].Target(), i, addr, targets[i])
		}
		c := dial(t, addr)
		if i == 1 {
			nothing(t, c, "client of the partitioned server")
			continue
		}
		sc := servers[i].accept(t) // the connection reached server i
		send(t, c, sc, "hello")
	}
	if got := servers[1].accepted(); got != 0 {
		t.Errorf("the partitioned server accepted %d connections", got)
	}
}

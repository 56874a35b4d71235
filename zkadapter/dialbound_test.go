package zkadapter

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// badEndpoint is something at an address that is not a working ZooKeeper.
type badEndpoint struct {
	name  string
	start func(t *testing.T) string // returns the address
	cause func(err error) bool      // the cause Dial's error must wrap
}

func badEndpoints() []badEndpoint {
	anyCause := func(error) bool { return true }
	return []badEndpoint{
		{"silent listener", silentListener, func(err error) bool { return strings.Contains(err.Error(), "no connect response") }},
		// Go's HTTP server waits for a request line's end, which a connect
		// request never has: it says nothing, as a silent listener.
		{"go http server", func(t *testing.T) string {
			s := httptest.NewServer(http.NotFoundHandler())
			t.Cleanup(s.Close)
			return s.Listener.Addr().String()
		}, func(err error) bool { return strings.Contains(err.Error(), "no connect response") }},
		{"http 400 reply", http400Listener, notZooKeeper("HTTP")},
		{"ssh banner", sshListener, notZooKeeper("SSH")},
		{"closes at once", closingListener, anyCause},
		{"closed port", func(t *testing.T) string {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := l.Addr().String()
			l.Close()
			return addr
		}, func(err error) bool { var op *net.OpError; return errors.As(err, &op) }},
		{"unresolvable name", func(*testing.T) string { return "no-such-host.invalid:2181" },
			func(err error) bool { var dns *net.DNSError; return errors.As(err, &dns) }},
	}
}

// acceptEach runs fn, on the listener's goroutine, for every connection l
// accepts, until the test ends; then l is closed, its goroutine waited for
// and every connection fn kept open is closed.
func acceptEach(t *testing.T, l net.Listener, fn func(net.Conn)) string {
	t.Helper()
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			fn(c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// listen is a TCP listener on loopback.
func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// silentListener accepts connections and never reads or writes: what a
// stopped (SIGSTOP) server or a half-dead load balancer looks like.
func silentListener(t *testing.T) string { return acceptEach(t, listen(t), func(net.Conn) {}) }

// closingListener accepts connections and closes them at once.
func closingListener(t *testing.T) string {
	return acceptEach(t, listen(t), func(c net.Conn) { c.Close() })
}

// notZooKeeper is the cause of an endpoint that answers as the service
// named does: ErrNotZooKeeper, and a message that names that service.
func notZooKeeper(service string) func(error) bool {
	return func(err error) bool {
		return errors.Is(err, ErrNotZooKeeper) && strings.Contains(err.Error(), "not a ZooKeeper server") &&
			strings.Contains(err.Error(), "as an "+service+" server does")
	}
}

// http400Listener reads what a client sends and answers 400 Bad Request,
// then closes: what most HTTP servers and proxies do with bytes that are
// not an HTTP request.
func http400Listener(t *testing.T) string {
	return acceptEach(t, listen(t), func(c net.Conn) {
		// Bounded, so a client that never writes cannot hold the
		// accepting goroutine past the test's end.
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 512)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		c.Close()
	})
}

// sshListener greets every connection with an SSH banner, as an SSH
// server does before it reads anything, and keeps it open.
func sshListener(t *testing.T) string {
	return acceptEach(t, listen(t), func(c net.Conn) { io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n") })
}

// aboutASecond is the doc's "within about a second" of the deadline:
// Close's second, plus what the scheduler takes on a loaded machine (a
// run beside make sim's seeds took 1.52s past the deadline: 20ms over a
// bare second).
const aboutASecond = time.Second + 500*time.Millisecond

// Dial against an endpoint that is not a working ZooKeeper returns, within
// the context's deadline plus about a second, an error wrapping
// ErrNoSession, the context's error and the last failure's cause, and
// leaves nothing running (goleak in TestMain).
func TestDialBadEndpointBounded(t *testing.T) {
	const deadline = 3 * time.Second
	for _, ep := range badEndpoints() {
		t.Run(ep.name, func(t *testing.T) {
			t.Parallel()
			addr := ep.start(t)
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			start := time.Now()
			c, err := Dial(ctx, Config{Servers: []string{addr}, SessionTimeout: 30 * time.Second, Logger: testLogger(t)})
			took := time.Since(start)
			if err == nil {
				c.Close()
				t.Fatal("Dial succeeded")
			}
			if !errors.Is(err, ErrNoSession) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Dial = %v, want ErrNoSession and DeadlineExceeded", err)
			}
			if !ep.cause(err) {
				t.Fatalf("Dial = %v: the cause is not wrapped", err)
			}
			if took > deadline+aboutASecond {
				t.Fatalf("Dial took %s, over the deadline (%s) plus %s", took, deadline, aboutASecond)
			}
			t.Logf("%s: %v", took.Round(time.Millisecond), err)
		})
	}
}

// Close and executor.Run's return after its context ends take at most 2 s
// against every bad endpoint, with requests pending.
func TestCloseBadEndpointBounded(t *testing.T) {
	for _, ep := range badEndpoints() {
		t.Run(ep.name, func(t *testing.T) {
			t.Parallel()
			addr := ep.start(t)
			c, err := New(Config{Servers: []string{addr}, SessionTimeout: 30 * time.Second, Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			e, err := executor.New(executor.Config{Conn: c})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			ran := make(chan error, 1)
			go func() { ran <- e.Run(ctx) }()
			got := make(chan error, 1)
			executor.Submit(e, task.Get("/x"), func(_ task.Data, err error) { got <- err })
			// Let go-zookeeper's loop get into its dial or handshake.
			cctx, ccancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			if err := c.Connect(cctx); err == nil {
				t.Fatal("connected")
			}
			ccancel()
			start := time.Now()
			cancel()
			if err := <-ran; !errors.Is(err, context.Canceled) {
				t.Fatalf("Run = %v", err)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Fatalf("Run took %s to return after cancel", took)
			}
			if err := <-got; err == nil {
				t.Fatal("the flow succeeded")
			}
		})
	}
}

// With a context that has no deadline, Dial gives up after
// Config.DialTimeout, whose default is the session timeout plus one
// ConnectTimeout per server; the error says so and wraps ErrNoSession and
// context.DeadlineExceeded. Bounded by that plus Close's second.
func TestDialBackgroundBounded(t *testing.T) {
	eps := badEndpoints()
	for _, ep := range eps {
		for _, set := range []bool{false, true} {
			name := ep.name + "/default"
			cfg := Config{SessionTimeout: 400 * time.Millisecond, ConnectTimeout: 100 * time.Millisecond, Logger: testLogger(t)}
			bound := cfg.SessionTimeout + cfg.ConnectTimeout // one server
			if set {
				name = ep.name + "/set"
				cfg.DialTimeout = 300 * time.Millisecond
				bound = cfg.DialTimeout
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				cfg.Servers = []string{ep.start(t)}
				start := time.Now()
				c, err := Dial(context.Background(), cfg)
				took := time.Since(start)
				if err == nil {
					c.Close()
					t.Fatal("Dial succeeded")
				}
				if !errors.Is(err, ErrNoSession) || !errors.Is(err, context.DeadlineExceeded) ||
					!strings.Contains(err.Error(), "DialTimeout "+bound.String()) {
					t.Fatalf("Dial = %v, want ErrNoSession and DeadlineExceeded naming DialTimeout %s", err, bound)
				}
				if took < bound || took > bound+aboutASecond {
					t.Fatalf("Dial took %s, want %s to %s", took, bound, bound+aboutASecond)
				}
			})
		}
	}
}

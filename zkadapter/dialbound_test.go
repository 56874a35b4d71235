package zkadapter

import (
	"context"
	"errors"
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
		{"http server", func(t *testing.T) string {
			s := httptest.NewServer(http.NotFoundHandler())
			t.Cleanup(s.Close)
			return s.Listener.Addr().String()
		}, anyCause},
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

// Dial against an endpoint that is not a working ZooKeeper returns, within
// the context's deadline plus a second, an error wrapping ErrNoSession,
// the context's error and the last failure's cause, and leaves nothing
// running (goleak in TestMain).
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
			if took > deadline+time.Second {
				t.Fatalf("Dial took %s, over the deadline (%s) plus 1s", took, deadline)
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

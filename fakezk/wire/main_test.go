package wire_test

import (
	"net"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/wire"
	"github.com/zkflow/zkflow/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig is a fakezk.Server served on a loopback port.
type rig struct {
	zk   *fakezk.Server
	srv  *wire.Server
	addr string
	// attached and detached receive the session id of each connection
	// attached to its session, and of each that closed (wire.Config's
	// hooks): a test waits on them for a client in real time.
	attached, detached chan int64
}

// hook hands a session id to ch without blocking (the buffer is far larger
// than any test's connections).
func hook(ch chan int64) func(int64) {
	return func(id int64) {
		select {
		case ch <- id:
		default:
		}
	}
}

// start serves a fakezk server made from cfg (the real clock and a 100ms
// tick if cfg leaves them zero); everything stops at the test's end.
func start(t testing.TB, cfg fakezk.Config) *rig {
	t.Helper()
	if cfg.Clock == nil {
		cfg.Clock = task.RealClock()
	}
	if cfg.TickTime == 0 {
		cfg.TickTime = 100 * time.Millisecond
	}
	zk := fakezk.New(cfg)
	attached, detached := make(chan int64, 4096), make(chan int64, 4096)
	srv := wire.New(zk, wire.Config{OnAttach: hook(attached), OnDetach: hook(detached)})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; err != wire.ErrServerClosed {
			t.Errorf("Serve: %v", err)
		}
		zk.Close()
	})
	return &rig{zk: zk, srv: srv, addr: l.Addr().String(), attached: attached, detached: detached}
}

type discard struct{}

func (discard) Printf(string, ...any) {}

// dial connects go-zookeeper and waits for its session.
func (r *rig) dial(t *testing.T) (*gozk.Conn, <-chan gozk.Event) {
	t.Helper()
	return r.dialTB(t)
}

func (r *rig) dialTB(t testing.TB) (*gozk.Conn, <-chan gozk.Event) {
	t.Helper()
	c, events, err := gozk.Connect([]string{r.addr}, 2*time.Second, gozk.WithLogger(discard{}), gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	waitState(t, events, gozk.StateHasSession)
	return c, events
}

// waitState waits, at most 10s of real time, for the client to report st.
func waitState(t testing.TB, events <-chan gozk.Event, st gozk.State) gozk.Event {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case ev := <-events:
			if ev.Type == gozk.EventSession && ev.State == st {
				return ev
			}
		case <-timeout.C:
			t.Fatalf("no %v within 10s", st)
		}
	}
}

// waitEvent waits, at most 10s, for a watch's event.
func waitEvent(t *testing.T, ch <-chan gozk.Event) gozk.Event {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	select {
	case ev := <-ch:
		return ev
	case <-timeout.C:
		t.Fatal("no watch event within 10s")
	}
	return gozk.Event{}
}

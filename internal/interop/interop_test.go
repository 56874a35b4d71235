package interop_test

import (
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/fakezk/wire"
	"github.com/zkflow/zkflow/internal/interop"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// handshake opens a session on addr asking for timeout and returns the
// timeout the server granted.
func handshake(t *testing.T, addr string, timeout time.Duration) time.Duration {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := wire.ConnectRequest{TimeOut: int32(timeout / time.Millisecond), Passwd: make([]byte, 16)}
	payload := req.Encode(nil)
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	if _, err := c.Write(append(msg, payload...)); err != nil {
		t.Fatal(err)
	}
	b, err := wire.ReadFrame(c, wire.DefaultMaxFrame, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := wire.DecodeConnectResponse(b)
	if err != nil {
		t.Fatal(err)
	}
	if resp.SessionID == 0 {
		t.Fatalf("no session: %+v", resp)
	}
	return time.Duration(resp.TimeOut) * time.Millisecond
}

// The fake grants timeouts up to what zkserver's real server grants: 2s
// by default, Options.MaxSessionTimeout when it says more; its minimum is
// a tenth of that maximum (two ticks).
func TestFakeSessionTimeouts(t *testing.T) {
	for _, tc := range []struct {
		opts     zkserver.Options
		min, max time.Duration
	}{
		{zkserver.Options{}, 200 * time.Millisecond, 2 * time.Second},
		{zkserver.Options{MaxSessionTimeout: 10 * time.Second}, time.Second, 10 * time.Second},
	} {
		srv := interop.StartFake(t, tc.opts)
		if got := handshake(t, srv.Addrs()[0], 30*time.Second); got != tc.max {
			t.Errorf("%+v: granted %v for 30s, want %v", tc.opts, got, tc.max)
		}
		if got := handshake(t, srv.Addrs()[0], 0); got != tc.min {
			t.Errorf("%+v: granted %v for 0, want %v", tc.opts, got, tc.min)
		}
	}
}

// Proxied: clients dial the proxy, DirectAddr is the server's own, and a
// healed partition lets new connections through again.
func TestFakeProxied(t *testing.T) {
	srv := interop.StartFake(t, zkserver.Options{Proxied: true})
	if srv.Addrs()[0] == srv.DirectAddr(0) {
		t.Fatalf("proxied fake dialled directly at %s", srv.DirectAddr(0))
	}
	handshake(t, srv.Addrs()[0], time.Second)
	handshake(t, srv.DirectAddr(0), time.Second)
	srv.Partition(0)
	srv.Heal(0)
	handshake(t, srv.Addrs()[0], time.Second)
}

// Partition on a fake with no proxy is a programming error that says so.
func TestFakeUnproxiedPartition(t *testing.T) {
	srv := interop.StartFake(t, zkserver.Options{})
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "Proxied") {
			t.Fatalf("Partition without a proxy: recovered %v", r)
		}
	}()
	srv.Partition(0)
}

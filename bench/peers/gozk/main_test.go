package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/internal/peers"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A server that is down gets an error within the session timeout, not a
// hang, and the connection's goroutines end.
func TestServerDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	p := peers.Params{Server: addr, Scenario: "cas", Clients: 1, Ops: 1, Path: "/x", SessionTimeout: 500 * time.Millisecond}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	_, err = run(context.Background(), p)
	if err == nil || !strings.Contains(err.Error(), "no session") {
		t.Fatalf("run against a server that is down: %v", err)
	}
}

// On a real server: each scenario does the operations asked for, and an
// unknown scenario is refused.
func TestRun(t *testing.T) {
	zkserver.Require(t)
	cl := zkserver.Standalone(t, zkserver.Options{})
	ctx := context.Background()
	for _, sc := range []string{"lock", "cas", "pipeline", "get", "set"} {
		p := peers.Params{Server: cl.Addrs()[0], Scenario: sc, Clients: 2, Ops: 5, Outstanding: 3, Path: "/gozk/" + sc}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		r, err := run(ctx, p)
		want := int64(10)
		if sc == "pipeline" || sc == "get" || sc == "set" {
			want = 15 // 3 goroutines on one session
		}
		if err != nil || r.Ops != want || r.Impl != "gozk" {
			t.Fatalf("%s: %s, %v; want %d ops", sc, peers.Format(r), err, want)
		}
	}
	p := peers.Params{Server: cl.Addrs()[0], Scenario: "dance", Clients: 1, Ops: 1, Path: "/gozk/x", SessionTimeout: time.Second}
	if _, err := run(ctx, p); err == nil {
		t.Fatal("unknown scenario accepted")
	}
}

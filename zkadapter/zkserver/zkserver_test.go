package zkserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStandaloneStopRestart(t *testing.T) {
	c := Standalone(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if m, err := c.Server(0).Mode(ctx); err != nil || m != "standalone" {
		t.Fatalf("mode = %q, %v; want standalone", m, err)
	}
	c.Stop(0)
	if c.Server(0).Running() {
		t.Fatal("running after Stop")
	}
	if err := c.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	c.Kill(0)
	if err := c.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
}

func TestEnsembleQuorum(t *testing.T) {
	c := Ensemble(t, 3, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader := c.Leader(ctx)
	if leader < 0 {
		t.Fatal("no leader")
	}
	a, b := (leader+1)%3, (leader+2)%3
	c.Kill(a)
	c.Kill(b)
	if err := c.WaitNotServing(ctx, leader); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitServing(ctx, leader); err != nil {
		t.Fatal(err)
	}
}

// recordTB records what Require does instead of doing it.
type recordTB struct {
	testing.TB
	skipped, failed string
}

func (r *recordTB) Helper()                           {}
func (r *recordTB) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recordTB) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestRequireSkipsOrFails(t *testing.T) {
	defer func(d string) { jarDir = d }(jarDir)
	jarDir = t.TempDir() // no jars here

	t.Setenv("ZK_REQUIRED", "")
	r := &recordTB{TB: t}
	Require(r)
	if r.failed != "" || !strings.Contains(r.skipped, "apt-get install default-jdk-headless zookeeper") ||
		!strings.Contains(r.skipped, "make test") || !strings.Contains(r.skipped, "ZK_REQUIRED=1") {
		t.Errorf("without ZK_REQUIRED: skipped %q, failed %q; want a skip saying how to install and how to fail instead", r.skipped, r.failed)
	}
	t.Setenv("ZK_REQUIRED", "1")
	r = &recordTB{TB: t}
	Require(r)
	if r.skipped != "" || !strings.Contains(r.failed, "ZK_REQUIRED=1") {
		t.Errorf("with ZK_REQUIRED=1: skipped %q, failed %q; want a failure", r.skipped, r.failed)
	}
	t.Log(r.failed)
}

// TestUnavailable: outside a test, a missing installation is an error
// wrapping ErrUnavailable, and nothing is left behind.
func TestUnavailable(t *testing.T) {
	defer func(d string) { jarDir = d }(jarDir)
	jarDir = t.TempDir()
	if c, err := NewEnsemble(3, Options{Proxied: true}); !errors.Is(err, ErrUnavailable) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("NewEnsemble without jars: %v; want ErrUnavailable", err)
	}
	if _, err := NewEnsemble(0, Options{}); err == nil {
		t.Fatal("NewEnsemble(0) succeeded")
	}
}

// TestPartitionNeedsProxied: Partition on a cluster without proxies is a
// programmer error, named.
func TestPartitionNeedsProxied(t *testing.T) {
	c := &Cluster{servers: []*Server{{}}}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "Options.Proxied") {
			t.Fatalf("recovered %v; want a panic naming Options.Proxied", r)
		}
	}()
	c.Partition(0)
}

// TestEstablished reads cons answers: the session's connections are found
// by their exact sid, and the one established last wins.
func TestEstablished(t *testing.T) {
	const cons = " /127.0.0.1:47660[0](queued=0,recved=1,sent=0)\n" +
		" /127.0.0.1:35310[1](queued=0,recved=1,sent=1,sid=0x30000eb63810000,lop=SESS,est=1795519986883,to=2000,lcxid=0x0,lzxid=0x100000001,lresp=15426482,llat=4,minlat=0,avglat=4,maxlat=4)\n" +
		" /127.0.0.1:35311[1](queued=0,recved=1,sent=1,sid=0x30000eb63810000,lop=null,est=1795519988001,to=2000,lcxid=0x0,lzxid=0x0,lresp=0,llat=0)\n" +
		" /127.0.0.1:35312[1](queued=0,recved=1,sent=1,sid=0x30000eb638100001,est=99999999)\n" +
		" /127.0.0.1:35313[1](queued=0,recved=1,sent=1,sid=0x9000000000000000,est=7)\n\n"
	for _, tc := range []struct {
		name    string
		session int64
		want    int64
		found   bool
	}{
		{"two connections: the later one", 0x30000eb63810000, 1795519988001, true},
		{"a longer id is another session", 0x30000eb638100001, 99999999, true},
		{"absent", 0x30000eb63810001, 0, false},
		{"a negative id, as Java prints it", -0x7000000000000000, 7, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found := established(cons, tc.session)
			if got != tc.want || found != tc.found {
				t.Fatalf("established = %d, %t; want %d, %t", got, found, tc.want, tc.found)
			}
		})
	}
}

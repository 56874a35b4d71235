package zkserver

import (
	"context"
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
	if m, err := c.Servers[0].Mode(ctx); err != nil || m != "standalone" {
		t.Fatalf("mode = %q, %v; want standalone", m, err)
	}
	c.Stop(0)
	if c.Servers[0].Running() {
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
	if r.failed != "" || !strings.Contains(r.skipped, "make test") {
		t.Errorf("without ZK_REQUIRED: skipped %q, failed %q; want a skip saying how to run", r.skipped, r.failed)
	}
	t.Setenv("ZK_REQUIRED", "1")
	r = &recordTB{TB: t}
	Require(r)
	if r.skipped != "" || !strings.Contains(r.failed, "ZK_REQUIRED=1") {
		t.Errorf("with ZK_REQUIRED=1: skipped %q, failed %q; want a failure", r.skipped, r.failed)
	}
	t.Log(r.failed)
}

package target

import (
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEmbeddedAndRoot(t *testing.T) {
	var tg Target
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	tg.Register(fs)
	if err := fs.Parse([]string{"-seed", "3"}); err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if tg.Embedded() == nil || tg.Root("demo") != "/demo" || !strings.Contains(tg.Describe(), "seed 3") {
		t.Fatalf("embedded target: %v %q %q", tg.Embedded(), tg.Root("demo"), tg.Describe())
	}
	c, err := tg.Connect(context.Background())
	if err != nil || c == nil {
		t.Fatalf("connect: %v", err)
	}
	c.Close()

	real := Target{Servers: "127.0.0.1:1"}
	if real.Embedded() != nil || !strings.HasPrefix(real.Root("demo"), "/demo-") || real.Root("demo") != real.Root("other") {
		t.Fatalf("real target root %q", real.Root("demo"))
	}
}

func TestClient(t *testing.T) {
	var tg Target
	ctx := context.Background()
	a, err := tg.NewClient(ctx, "a", IgnoreErrors())
	if err != nil {
		t.Fatal(err)
	}
	var wrapped int
	b, err := tg.NewClient(ctx, "b", WrapConn(func(c *fakezk.Conn) task.Conn { wrapped++; return c }))
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "a" || a.FakeConn() == nil || wrapped != 1 {
		t.Fatalf("client a %q fake %v, wrapped %d", a.Name, a.FakeConn(), wrapped)
	}
	if _, err := executor.Await(ctx, a.Ex, task.Create("/x", nil, task.Ephemeral)); err != nil {
		t.Fatal(err)
	}
	a.Kill()
	a.Kill() // twice is harmless
	if !a.Killed() || b.Killed() {
		t.Fatalf("killed: a %v b %v", a.Killed(), b.Killed())
	}
	// a's session closed with it: its ephemeral node is gone.
	if _, err := executor.Await(ctx, b.Ex, task.Get("/x")); !errors.Is(err, task.ErrNoNode) {
		t.Fatalf("a's node after Kill: %v", err)
	}
	tg.Close()
	if !b.Killed() {
		t.Fatal("Close left b running")
	}
}

func TestClientServerDown(t *testing.T) {
	tg := Target{Servers: "127.0.0.1:1", SessionTimeout: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, err := tg.NewClient(ctx, "a"); err == nil {
		c.Kill()
		t.Fatal("client on a server that is down")
	}
	tg.Close()
}

func TestFlagSet(t *testing.T) {
	var tg Target
	var out strings.Builder
	fs := tg.FlagSet("demo", &out)
	n := fs.Int("n", 1, "a count")
	if err := fs.Parse([]string{"-zk", "h:1", "-seed", "7", "-n", "2"}); err != nil {
		t.Fatal(err)
	}
	if tg.Servers != "h:1" || tg.Seed != 7 || *n != 2 {
		t.Fatalf("parsed %q %d %d", tg.Servers, tg.Seed, *n)
	}
	if err := fs.Parse([]string{"-nosuchflag"}); err == nil || !strings.Contains(out.String(), "-nosuchflag") {
		t.Fatalf("bad flag: %v, output %q", err, out.String())
	}
}

func TestChecks(t *testing.T) {
	var c Checks
	c.Check(true, "a is %d", 1)
	var out strings.Builder
	if err := c.Report(&out); err != nil || out.String() != "  ok: a is 1\nOK\n" {
		t.Fatalf("all verified: %v %q", err, out.String())
	}
	c.Check(false, "b is %d", 2)
	out.Reset()
	if err := c.Report(&out); err == nil || out.String() != "  ok: a is 1\n  FAILED: b is 2\n" {
		t.Fatalf("one failed: %v %q", err, out.String())
	}
}

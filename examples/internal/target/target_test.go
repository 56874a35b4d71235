package target

import (
	"context"
	"flag"
	"strings"
	"testing"

	"go.uber.org/goleak"
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

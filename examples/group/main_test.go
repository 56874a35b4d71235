package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/internal/zkserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func check(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), args, &out); err != nil {
		t.Fatalf("group %v: %v\n%s", args, err, out.String())
	}
	s := out.String()
	if !strings.HasSuffix(s, "OK\n") || strings.Contains(s, "FAILED") {
		t.Fatalf("no verified summary:\n%s", s)
	}
	for _, want := range []string{"left [api-1]", "left [api-3]", "the watcher's view [api-2", "member ended when its session was closed"} {
		if !strings.Contains(s, want) {
			t.Fatalf("%q missing:\n%s", want, s)
		}
	}
	return s
}

func TestOnFake(t *testing.T) {
	for _, seed := range []string{"1", "2", "3"} {
		s := check(t, "-seed", seed)
		if !strings.Contains(s, "registered again on its new session") {
			t.Fatalf("seed %s: no re-registration after expiry:\n%s", seed, s)
		}
	}
	check(t, "-members", "5")
}

func TestOnRealServer(t *testing.T) {
	zkserver.Require(t)
	c := zkserver.Standalone(t, zkserver.Options{})
	s := check(t, "-zk", strings.Join(c.Addrs(), ","))
	if strings.Contains(s, "session expires") {
		t.Fatalf("fault injected on a real server:\n%s", s)
	}
}

func TestBadFlags(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-members", "2"}, &out); err == nil {
		t.Fatal("-members 2 accepted")
	}
}

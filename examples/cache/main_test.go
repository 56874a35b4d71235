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
		t.Fatalf("cache %v: %v\n%s", args, err, out.String())
	}
	s := out.String()
	if !strings.HasSuffix(s, "OK\n") || strings.Contains(s, "FAILED") {
		t.Fatalf("no verified summary:\n%s", s)
	}
	for _, want := range []string{"ok: every worker reported added", "w1 reported removed", "w2 reported re-created",
		"ok: every cached node is the server's node"} {
		if !strings.Contains(s, want) {
			t.Fatalf("%q missing:\n%s", want, s)
		}
	}
	return s
}

func TestOnFake(t *testing.T) {
	for _, seed := range []string{"1", "2"} {
		s := check(t, "-seed", seed)
		if !strings.Contains(s, "ok: after the new session: w1 added and w3 removed") {
			t.Fatalf("seed %s: no resync after expiry:\n%s", seed, s)
		}
	}
	check(t, "-workers", "5")
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
	if err := run(context.Background(), []string{"-workers", "1"}, &out); err == nil {
		t.Fatal("-workers 1 accepted")
	}
}

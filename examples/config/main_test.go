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
		t.Fatalf("config %v: %v\n%s", args, err, out.String())
	}
	s := out.String()
	if !strings.HasSuffix(s, "OK\n") || strings.Contains(s, "FAILED") {
		t.Fatalf("no verified summary:\n%s", s)
	}
	for _, want := range []string{"run 1 starts with greeting=hello threads=2", "starts with greeting=bonjour threads=4",
		"starts with greeting=hallo threads=8", "ok: at most one run at a time"} {
		if !strings.Contains(s, want) {
			t.Fatalf("%q missing:\n%s", want, s)
		}
	}
	return s
}

func TestOnFake(t *testing.T) {
	s := check(t)
	if !strings.Contains(s, "applied after the reconnect") || !strings.Contains(s, "greeting=ciao threads=16") {
		t.Fatalf("no version delivered after the reconnect:\n%s", s)
	}
}

func TestOnRealServer(t *testing.T) {
	zkserver.Require(t)
	c := zkserver.Standalone(t, zkserver.Options{})
	s := check(t, "-zk", strings.Join(c.Addrs(), ","))
	if strings.Contains(s, "cut off") {
		t.Fatalf("fault injected on a real server:\n%s", s)
	}
}

func TestBadFlags(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-timeout", "0s"}, &out); err == nil {
		t.Fatal("-timeout 0s accepted")
	}
}

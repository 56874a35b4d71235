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
		t.Fatalf("masterworker %v: %v\n%s", args, err, out.String())
	}
	s := out.String()
	for _, want := range []string{"ok: every task answered with its own result", "ok: one status per task", "ok: nothing left queued or assigned", "ok: the backup master took over"} {
		if !strings.Contains(s, want) {
			t.Fatalf("missing %q:\n%s", want, s)
		}
	}
	if !strings.HasSuffix(s, "OK\n") {
		t.Fatalf("no verified summary:\n%s", s)
	}
	return s
}

func TestOnFake(t *testing.T) {
	for _, seed := range []string{"1", "2", "3"} {
		s := check(t, "-seed", seed)
		if !strings.Contains(s, "crashed: master-") || !strings.Contains(s, "worker-1") {
			t.Fatalf("seed %s: crashes not made:\n%s", seed, s)
		}
	}
}

func TestOnRealServer(t *testing.T) {
	zkserver.Require(t)
	c := zkserver.Standalone(t, zkserver.Options{})
	check(t, "-zk", strings.Join(c.Addrs(), ","), "-workers", "3", "-tasks", "45")
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-workers", "1"}, {"-tasks", "0"}, {"-workers", "-3"}, {"-nosuchflag"}} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

func TestServerDown(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-zk", "127.0.0.1:1", "-timeout", "2s"}, &out)
	if err == nil {
		t.Fatalf("ran against a server that is down:\n%s", out.String())
	}
	t.Logf("%v", err)
}

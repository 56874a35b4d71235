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
		t.Fatalf("lock %v: %v\n%s", args, err, out.String())
	}
	s := out.String()
	if strings.Contains(s, "FAILED") || !strings.HasSuffix(s, "OK\n") {
		t.Fatalf("no verified summary:\n%s", s)
	}
	return s
}

func TestOnFake(t *testing.T) {
	for _, seed := range []string{"1", "2", "3"} {
		s := check(t, "-seed", seed)
		for _, want := range []string{"connection drops in its section", "session expires in its section", "is told: lock: lost",
			"late write refused: lock: fenced write: lock: lost", "12 fenced writes accepted in token order, counter at 12", "late writes refused by ZooKeeper: 1"} {
			if !strings.Contains(s, want) {
				t.Fatalf("seed %s: missing %q:\n%s", seed, want, s)
			}
		}
		if seed == "1" {
			t.Log(s)
		}
	}
}

func TestOnRealServer(t *testing.T) {
	zkserver.Require(t)
	c := zkserver.Standalone(t, zkserver.Options{})
	s := check(t, "-zk", strings.Join(c.Addrs(), ","))
	if !strings.Contains(s, "12 fenced writes accepted in token order, counter at 12") || strings.Contains(s, "fault:") {
		t.Fatalf("real server run:\n%s", s)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-workers", "1"}, {"-sections", "1"}, {"-sections", "-4"}, {"extra"}, {"-nosuchflag"}} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

func TestServerDown(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-zk", "127.0.0.1:1", "-timeout", "2s"}, &out); err == nil {
		t.Fatalf("ran against a server that is down:\n%s", out.String())
	} else {
		t.Log(err)
	}
}

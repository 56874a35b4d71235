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
		t.Fatalf("idpersist %v: %v\n%s", args, err, out.String())
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
		for _, want := range []string{"fault: every server's data is wiped", "120 IDs, 120 distinct, all at most the durable mark", "after the wipe IDs resumed at"} {
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
	s := check(t, "-zk", strings.Join(c.Addrs(), ","), "-workers", "2", "-ids", "30")
	for _, want := range []string{"no wipe", "60 IDs, 60 distinct", "a backup took over from replica"} {
		if !strings.Contains(s, want) {
			t.Fatalf("missing %q:\n%s", want, s)
		}
	}
	t.Log(s)
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-replicas", "1"}, {"-workers", "0"}, {"-ids", "1"}, {"-chunk", "0"}, {"-chunk", "-20"}, {"extra"}, {"-nosuchflag"}} {
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

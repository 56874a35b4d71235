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
		t.Fatalf("barrier %v: %v\n%s", args, err, out.String())
	}
	s := out.String()
	if !strings.HasSuffix(s, "OK\n") || strings.Contains(s, "FAILED") {
		t.Fatalf("no verified summary:\n%s", s)
	}
	return s
}

func TestOnFake(t *testing.T) {
	for _, seed := range []string{"1", "2", "3"} {
		s := check(t, "-seed", seed)
		for _, want := range []string{"faults injected: 2", "lost create reply was settled", "round 3: nobody entered before all 4 had arrived"} {
			if !strings.Contains(s, want) {
				t.Fatalf("seed %s: %q missing:\n%s", seed, want, s)
			}
		}
	}
}

func TestOnRealServer(t *testing.T) {
	zkserver.Require(t)
	c := zkserver.Standalone(t, zkserver.Options{})
	s := check(t, "-zk", strings.Join(c.Addrs(), ","), "-workers", "3", "-rounds", "2")
	if !strings.Contains(s, "faults injected: 0") {
		t.Fatalf("faults on a real server:\n%s", s)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-workers", "1"}, {"-rounds", "0"}, {"-workers", "-3"}} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

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
		t.Fatalf("election %v: %v\n%s", args, err, out.String())
	}
	s := out.String()
	if strings.Contains(s, "FAILED") || !strings.HasSuffix(s, "OK\n") || !strings.Contains(s, "term 6: candidate") {
		t.Fatalf("no verified summary:\n%s", s)
	}
	return s
}

func TestElectionOnFake(t *testing.T) {
	t.Log(check(t))
}

func TestElectionOnRealServer(t *testing.T) {
	zkserver.Require(t)
	c := zkserver.Standalone(t, zkserver.Options{})
	check(t, "-zk", strings.Join(c.Addrs(), ","))
}

func TestElectionBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-candidates", "1"}, {"-terms", "0"}, {"-hold", "-1s"}, {"extra"}} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

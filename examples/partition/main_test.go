package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var checks = []string{
	"check: all joined: every queue held by exactly one of [worker-1 worker-2 worker-3]",
	"check: fenced writes of every holder applied",
	"check: worker-3 left: every queue held by exactly one of [worker-1 worker-2]",
	"with its old hold",
	"summary: 0 checks failed\nOK\n",
}

func runAndCheck(t *testing.T, args []string, want []string) {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), args, &out); err != nil {
		t.Fatalf("run %v: %v\n%s", args, err, out.String())
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Fatalf("run %v: no %q in:\n%s", args, w, out.String())
		}
	}
}

func TestOnFake(t *testing.T) {
	runAndCheck(t, nil, checks)
	runAndCheck(t, []string{"-workers", "4", "-queues", "3"}, []string{"worker-4 left", "summary: 0 checks failed"})
}

func TestBadFlags(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-workers", "1"}, &out); err == nil {
		t.Fatal("-workers 1 accepted")
	}
}

func TestOnRealServer(t *testing.T) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, zkserver.Options{})
	runAndCheck(t, []string{"-zk", srv.Addrs()[0]}, checks)
}

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/examples/internal/extest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var checks = []string{
	"check: all joined: every queue held by exactly one of [worker-1 worker-2 worker-3]",
	"check: fenced writes of every holder applied",
	"check: worker-3 left: every queue held by exactly one of [worker-1 worker-2]",
	"with its old hold",
	"summary: 0 checks failed\n",
}

func runAndCheck(t *testing.T, args []string, want []string) {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), args, &out); err != nil {
		t.Fatalf("run %v: %v\n%s", args, err, out.String())
	}
	if s := out.String(); strings.Contains(s, "FAILED") || !strings.HasSuffix(s, "\nOK\n") {
		t.Fatalf("run %v: no verified summary:\n%s", args, s)
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
	// A connect string that does not parse is refused before any dial.
	extest.RefusedConnectStrings(t, run)
}

func TestOnRealServer(t *testing.T) {
	runAndCheck(t, extest.RealServer(t), checks)
}

// A -path whose parents are missing: the partitioner creates them, and
// the run deletes them with the rest (RealServer checks).
func TestOnRealServerNewParents(t *testing.T) {
	runAndCheck(t, append(extest.RealServer(t), "-path", "/a/b/partition"), []string{"deleted /a/b, made by the run", "deleted /a, made by the run"})
}

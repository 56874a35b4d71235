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
		t.Fatalf("quickstart %v: %v\n%s", args, err, out.String())
	}
	s := out.String()
	if strings.Contains(s, "FAILED") || !strings.HasSuffix(s, "OK\n") {
		t.Fatalf("no verified summary:\n%s", s)
	}
	// Every chapter's checks are in the summary.
	for _, want := range []string{"none repeated", "persistence leader killed", "lock holders never overlapped",
		"one status each", "moved back and done by another worker", "the backup took over", "reloaded themselves"} {
		if !strings.Contains(s, "ok: ") || !strings.Contains(s, want) {
			t.Fatalf("summary lacks %q:\n%s", want, s)
		}
	}
	return s
}

func TestQuickstartOnFake(t *testing.T) {
	for _, seed := range []string{"1", "2", "3"} {
		s := check(t, "-seed", seed)
		if strings.Contains(s, "faults injected: 0") || !strings.Contains(s, "backup took over") {
			t.Fatalf("seed %s: faults not injected:\n%s", seed, s)
		}
	}
}

func TestQuickstartOnRealServer(t *testing.T) {
	zkserver.Require(t)
	c := zkserver.Standalone(t, zkserver.Options{})
	check(t, "-zk", strings.Join(c.Addrs(), ","), "-workers", "3", "-ids", "40", "-sections", "5", "-tasks", "10")
}

func TestQuickstartBadFlags(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-workers", "0"}, &out); err == nil {
		t.Fatal("-workers 0 accepted")
	}
}

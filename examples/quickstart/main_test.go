package main

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/examples/internal/extest"
	"github.com/zkflow/zkflow/zkadapter"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// checks are every chapter's checks, in the summary of every run.
var checks = []string{"ok: ", "none repeated", "persistence leader killed", "lock holders never overlapped",
	"one status each", "moved back and done by another worker", "the backup took over", "reloaded themselves"}

func TestQuickstartOnFake(t *testing.T) {
	for _, seed := range extest.Seeds {
		s := extest.Run(t, run, []string{"-seed", seed}, checks...)
		if strings.Contains(s, "faults injected: 0") {
			t.Fatalf("seed %s: faults not injected:\n%s", seed, s)
		}
	}
}

func TestQuickstartOnRealServer(t *testing.T) {
	extest.Run(t, run, append(extest.RealServer(t), "-workers", "3", "-ids", "40", "-sections", "5", "-tasks", "10"), checks...)
}

func TestQuickstartBadFlags(t *testing.T) {
	extest.Refused(t, run, []string{"-workers", "0"})
}

// A -zk address nothing answers on fails in about 15 s (the README), not
// when the run's -timeout ends: Dial has a bound of its own.
func TestQuickstartUnreachableServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // a closed port: every connection is refused
	start := time.Now()
	err = run(context.Background(), []string{"-zk", addr, "-timeout", "2m"}, io.Discard)
	if !errors.Is(err, zkadapter.ErrNoSession) {
		t.Fatalf("run with -zk %s = %v; want an error wrapping zkadapter.ErrNoSession", addr, err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("run with -zk %s failed after %v, its -timeout (2m) rather than Dial's own bound (15s)", addr, took)
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/examples/internal/extest"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
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

// A run cut short, here by its -timeout, still deletes every node it made
// (RealServer checks) and says so.
func TestQuickstartOnRealServerCutShort(t *testing.T) {
	args := append(extest.RealServer(t), "-ids", "10000", "-timeout", "1s")
	var out bytes.Buffer
	err := run(context.Background(), args, &out)
	if s := out.String(); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(s, "\nclean-up: deleted /quickstart-") || strings.Contains(s, "\nOK\n") {
		t.Fatalf("run %q = %v; want a deadline error after the run's nodes were deleted, and no OK:\n%s", args, err, s)
	}
}

// A clean-up that cannot delete the run's nodes says so on a line with
// FAILED and fails the run, even one whose checks all passed: leaving
// nodes behind on a shared server is a defect. Here its session is gone.
func TestCleanUpFailureFailsTheRun(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Seed: 1})
	defer srv.Close()
	p, err := start(context.Background(), srv, "", "cleaner")
	if err != nil {
		t.Fatal(err)
	}
	p.stop()
	var out bytes.Buffer
	err = cleanUp(context.Background(), p.ex, "/quickstart", nil, &out)
	if s := out.String(); !errors.Is(err, task.ErrClosed) || !strings.HasPrefix(s, "clean-up FAILED: ") || strings.Contains(s, "OK") {
		t.Fatalf("cleanUp on a closed session = %v; want task.ErrClosed, a FAILED line and no OK:\n%s", err, s)
	}
}

func TestQuickstartBadFlags(t *testing.T) {
	extest.Refused(t, run, []string{"-workers", "0"})
	// A connect string that does not parse is refused before any dial.
	extest.RefusedConnectStrings(t, run)
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

// A -zk connect string whose chroot the server does not have fails at
// once, naming the root, before the run starts any work.
func TestQuickstartMissingChroot(t *testing.T) {
	zkserver.Require(t)
	c := zkserver.Standalone(t, zkserver.Options{})
	err := run(context.Background(), []string{"-zk", c.ConnectString() + "/no-such-root", "-timeout", "2m"}, io.Discard)
	if !errors.Is(err, task.ErrNoNode) || !strings.Contains(err.Error(), "/no-such-root") {
		t.Fatalf("run under a missing chroot = %v; want task.ErrNoNode naming the root", err)
	}
}

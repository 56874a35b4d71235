package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/examples/internal/extest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// checks are in every run's summary.
var checks = []string{"ok: every worker reported added", "w1 reported removed", "w2 reported re-created",
	"ok: every cached node is the server's node"}

func TestOnFake(t *testing.T) {
	for _, seed := range extest.Seeds {
		extest.Run(t, run, []string{"-seed", seed}, append(checks, "ok: after the new session: w1 added and w3 removed")...)
	}
	extest.Run(t, run, []string{"-workers", "5"}, checks...)
}

func TestOnRealServer(t *testing.T) {
	s := extest.Run(t, run, extest.RealServer(t), checks...)
	if strings.Contains(s, "session expires") {
		t.Fatalf("fault injected on a real server:\n%s", s)
	}
}

func TestBadFlags(t *testing.T) {
	extest.Refused(t, run, []string{"-workers", "1"})
}

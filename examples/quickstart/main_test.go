package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/examples/internal/extest"
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

package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/examples/internal/extest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// checks are in every run's summary.
var checks = []string{"left [api-1]", "left [api-3]", "the watcher's view [api-2", "member ended when its session was closed"}

func TestOnFake(t *testing.T) {
	for _, seed := range extest.Seeds {
		extest.Run(t, run, []string{"-seed", seed}, append(checks, "registered again on its new session")...)
	}
	extest.Run(t, run, []string{"-members", "5"}, checks...)
}

func TestOnRealServer(t *testing.T) {
	s := extest.Run(t, run, extest.RealServer(t), checks...)
	if strings.Contains(s, "session expires") {
		t.Fatalf("fault injected on a real server:\n%s", s)
	}
}

func TestBadFlags(t *testing.T) {
	extest.Refused(t, run, []string{"-members", "2"})
	// A connect string that does not parse is refused before any dial.
	extest.RefusedConnectStrings(t, run)
}

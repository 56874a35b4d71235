package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/examples/internal/extest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// checks are in every run's summary.
var checks = []string{"run 1 starts with greeting=hello threads=2", "starts with greeting=bonjour threads=4",
	"starts with greeting=hallo threads=8", "ok: at most one run at a time"}

func TestOnFake(t *testing.T) {
	extest.Run(t, run, nil, append(checks, "applied after the reconnect", "greeting=ciao threads=16")...)
}

func TestOnRealServer(t *testing.T) {
	s := extest.Run(t, run, extest.RealServer(t), checks...)
	if strings.Contains(s, "cut off") {
		t.Fatalf("fault injected on a real server:\n%s", s)
	}
}

func TestBadFlags(t *testing.T) {
	extest.Refused(t, run, []string{"-timeout", "0s"})
	// A connect string that does not parse is refused before any dial.
	extest.RefusedConnectStrings(t, run)
}

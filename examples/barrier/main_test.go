package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/examples/internal/extest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestOnFake(t *testing.T) {
	for _, seed := range extest.Seeds {
		extest.Run(t, run, []string{"-seed", seed},
			"faults injected: 2", "lost create reply was settled", "round 3: nobody entered before all 4 had arrived")
	}
}

func TestOnRealServer(t *testing.T) {
	extest.Run(t, run, append(extest.RealServer(t), "-workers", "3", "-rounds", "2"), "faults injected: 0")
}

func TestBadFlags(t *testing.T) {
	extest.Refused(t, run, []string{"-workers", "1"}, []string{"-rounds", "0"}, []string{"-workers", "-3"})
	// A connect string that does not parse is refused before any dial.
	extest.RefusedConnectStrings(t, run)
}

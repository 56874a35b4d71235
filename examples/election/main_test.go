package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/examples/internal/extest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestElectionOnFake(t *testing.T) {
	t.Log(extest.Run(t, run, nil, "term 6: candidate"))
}

func TestElectionOnRealServer(t *testing.T) {
	extest.Run(t, run, extest.RealServer(t), "term 6: candidate")
}

func TestElectionBadFlags(t *testing.T) {
	extest.Refused(t, run, []string{"-candidates", "1"}, []string{"-terms", "0"}, []string{"-hold", "-1s"}, []string{"extra"})
	// A connect string that does not parse is refused before any dial.
	extest.RefusedConnectStrings(t, run)
}

package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/examples/internal/extest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestOnFake(t *testing.T) {
	for _, seed := range extest.Seeds {
		s := extest.Run(t, run, []string{"-seed", seed},
			"240 IDs drawn, 240 distinct, each worker's increasing", "fault: worker 1's connection drops",
			"fault: worker 2's session expires", "(blocks of 10)", "(hex 00000000000000")
		if seed == "1" {
			t.Log(s)
		}
	}
}

func TestOnRealServer(t *testing.T) {
	s := extest.Run(t, run, append(extest.RealServer(t), "-workers", "3", "-ids", "30"), "90 IDs drawn, 90 distinct")
	if strings.Contains(s, "fault:") {
		t.Fatalf("faults on a real server:\n%s", s)
	}
}

func TestBadFlags(t *testing.T) {
	extest.Refused(t, run, []string{"-workers", "1"}, []string{"-ids", "2"}, []string{"-block", "0"}, []string{"-block", "-5"},
		[]string{"extra"}, []string{"-nosuchflag"})
	// A server that is down.
	extest.Refused(t, run, []string{"-zk", "127.0.0.1:1", "-timeout", "2s"})
	// A connect string that does not parse is refused before any dial.
	extest.RefusedConnectStrings(t, run)
}

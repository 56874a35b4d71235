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
			"connection drops in its section", "session expires in its section", "is told: lock: lost",
			"late write refused: lock: fenced write: lost",
			"12 fenced writes accepted in token order, counter at 12", "late writes refused by ZooKeeper: 1")
		if seed == "1" {
			t.Log(s)
		}
	}
}

func TestOnRealServer(t *testing.T) {
	s := extest.Run(t, run, extest.RealServer(t), "12 fenced writes accepted in token order, counter at 12")
	if strings.Contains(s, "fault:") {
		t.Fatalf("faults on a real server:\n%s", s)
	}
}

func TestBadFlags(t *testing.T) {
	extest.Refused(t, run, []string{"-workers", "1"}, []string{"-sections", "1"}, []string{"-sections", "-4"},
		[]string{"extra"}, []string{"-nosuchflag"})
	// A server that is down.
	extest.Refused(t, run, []string{"-zk", "127.0.0.1:1", "-timeout", "2s"})
	// A connect string that does not parse is refused before any dial.
	extest.RefusedConnectStrings(t, run)
}

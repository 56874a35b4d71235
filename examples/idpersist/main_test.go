package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/examples/internal/extest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestOnFake(t *testing.T) {
	for _, seed := range extest.Seeds {
		s := extest.Run(t, run, []string{"-seed", seed}, "fault: every server's data is wiped",
			"120 IDs, 120 distinct, all at most the durable mark", "after the wipe IDs resumed at")
		if seed == "1" {
			t.Log(s)
		}
	}
}

func TestOnRealServer(t *testing.T) {
	t.Log(extest.Run(t, run, append(extest.RealServer(t), "-workers", "2", "-ids", "30"),
		"no wipe", "60 IDs, 60 distinct", "a backup took over from replica"))
}

func TestBadFlags(t *testing.T) {
	extest.Refused(t, run, []string{"-replicas", "1"}, []string{"-workers", "0"}, []string{"-ids", "1"},
		[]string{"-chunk", "0"}, []string{"-chunk", "-20"}, []string{"extra"}, []string{"-nosuchflag"})
	// A server that is down.
	extest.Refused(t, run, []string{"-zk", "127.0.0.1:1", "-timeout", "2s"})
	// A connect string that does not parse is refused before any dial.
	extest.RefusedConnectStrings(t, run)
}

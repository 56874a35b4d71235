package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/examples/internal/extest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestOnFake(t *testing.T) {
	for _, seed := range extest.Seeds {
		s := extest.Run(t, run, []string{"-seed", seed},
			"doomed consumer took job-3", "12 of 12 jobs acknowledged exactly once", "the dead consumer's job-3 came back")
		if seed == "1" {
			t.Log(s)
		}
	}
}

func TestOnRealServer(t *testing.T) {
	extest.Run(t, run, extest.RealServer(t), "12 of 12 jobs acknowledged exactly once")
}

func TestBadFlags(t *testing.T) {
	extest.Refused(t, run, []string{"-jobs", "1"}, []string{"-consumers", "0"}, []string{"extra"}, []string{"-nosuchflag"})
	// A server that is down.
	extest.Refused(t, run, []string{"-zk", "127.0.0.1:1", "-timeout", "2s"})
	// A connect string that does not parse is refused before any dial.
	extest.RefusedConnectStrings(t, run)
}

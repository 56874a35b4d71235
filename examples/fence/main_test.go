package main

import (
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/examples/internal/extest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestOnFake(t *testing.T) {
	for _, seed := range extest.Seeds {
		s := extest.Run(t, run, []string{"-seed", seed},
			"pauses while it holds the lock", "wakes and writes: refused: fence: key \"counter\"",
			"8 increments went through, counter 0 -> 8", "late writes refused by the database: 1")
		if seed == "1" {
			t.Log(s)
		}
	}
}

func TestOnRealServer(t *testing.T) {
	s := extest.Run(t, run, extest.RealServer(t), "8 increments went through", "late writes refused by the database: 1")
	if strings.Contains(s, "fault:") {
		t.Fatalf("faults on a real server:\n%s", s)
	}
}

// A kept database carries the tokens of the lock history that wrote it: a
// second run on a new embedded server (zxids from the start again) is
// refused, and the example says so with a failed check.
func TestKeptDatabaseRefusesAnotherHistory(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	extest.Run(t, run, []string{"-db", db}, "counter 0 -> 8")
	extest.Refused(t, run, []string{"-db", db, "-timeout", "5s"})
}

func TestBadFlags(t *testing.T) {
	extest.Refused(t, run, []string{"-workers", "1"}, []string{"-rounds", "1"},
		[]string{"extra"}, []string{"-nosuchflag"})
	// A server that is down.
	extest.Refused(t, run, []string{"-zk", "127.0.0.1:1", "-timeout", "2s"})
	// A connect string that does not parse is refused before any dial.
	extest.RefusedConnectStrings(t, run)
}

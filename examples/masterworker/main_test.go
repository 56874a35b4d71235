package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/examples/internal/extest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// checks are in every run's summary.
var checks = []string{"ok: every task answered with its own result", "ok: one status per task",
	"ok: nothing left queued or assigned", "ok: the backup master took over"}

func TestOnFake(t *testing.T) {
	for _, seed := range extest.Seeds {
		extest.Run(t, run, []string{"-seed", seed}, append(checks, "crashed: master-", "worker-1")...)
	}
}

func TestOnRealServer(t *testing.T) {
	extest.Run(t, run, append(extest.RealServer(t), "-workers", "3", "-tasks", "45"), checks...)
}

func TestBadFlags(t *testing.T) {
	extest.Refused(t, run, []string{"-workers", "1"}, []string{"-tasks", "0"}, []string{"-workers", "-3"}, []string{"-nosuchflag"})
	// A server that is down.
	extest.Refused(t, run, []string{"-zk", "127.0.0.1:1", "-timeout", "2s"})
	// A connect string that does not parse is refused before any dial.
	extest.RefusedConnectStrings(t, run)
}

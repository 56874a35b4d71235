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
			"3 readers hold the read lock together: true", "tries the write lock: rwlock: busy",
			"a reader that comes after the waiting writer tries: rwlock: busy",
			"session expires in its section", "is told: rwlock: lost",
			"late write refused: rwlock: fenced write: lost",
			"ok: 8 fenced writes accepted, counter at 8", "ok: 12 reads under the read lock", "late writes refused by ZooKeeper: 1")
		if seed == "1" {
			t.Log(s)
		}
	}
}

func TestOnRealServer(t *testing.T) {
	s := extest.Run(t, run, extest.RealServer(t), "ok: 8 fenced writes accepted, counter at 8")
	if strings.Contains(s, "fault:") {
		t.Fatalf("faults on a real server:\n%s", s)
	}
}

func TestBadFlags(t *testing.T) {
	extest.Refused(t, run, []string{"-readers", "1"}, []string{"-writers", "0"}, []string{"-sections", "1"},
		[]string{"extra"}, []string{"-nosuchflag"})
	// A server that is down.
	extest.Refused(t, run, []string{"-zk", "127.0.0.1:1", "-timeout", "2s"})
	// A connect string that does not parse is refused before any dial.
	extest.RefusedConnectStrings(t, run)
}

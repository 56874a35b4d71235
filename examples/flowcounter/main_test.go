package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/examples/internal/extest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The program on the embedded server: no two increments returned the
// same value, the counter is within what was acknowledged and what is
// unknown (run checks both and fails otherwise), and the lost reply of an
// applied write is reported as unknown, not as a failure to retry.
func TestOnFake(t *testing.T) {
	for _, seed := range []string{"1", "2", "3"} {
		var out bytes.Buffer
		err := run(context.Background(), []string{"-seed", seed}, &out)
		if s := out.String(); err != nil || !strings.Contains(s, "fault: worker 1's first applied write: its reply lost") ||
			!strings.HasSuffix(s, "counter 60: 59 increments acknowledged, 1 unknown\nOK\n") {
			t.Fatalf("seed %s: %v\n%s", seed, err, s)
		}
	}
}

// On a real server there is no fault, and the run deletes every node it
// made (RealServer checks).
func TestOnRealServer(t *testing.T) {
	s := extest.Run(t, run, extest.RealServer(t), "counter 60: 60 increments acknowledged, 0 unknown")
	if strings.Contains(s, "fault:") {
		t.Fatalf("faults on a real server:\n%s", s)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-workers", "0"}, {"-rounds", "0"}, {"extra"}, {"-nosuchflag"}, {"-timeout", "soon"},
		{"-zk", "127.0.0.1:1", "-timeout", "2s"}} { // the last: a server that is down, given up after -timeout
		var out bytes.Buffer
		if err := run(context.Background(), args, &out); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	// A connect string that does not parse is refused before any dial.
	extest.RefusedConnectStrings(t, run)
}

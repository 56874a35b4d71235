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

// The program on the embedded server: every job gets one owner, whose
// name its node holds, and every release deletes the node (run checks
// both and fails otherwise). Worker 1's first create is applied and its
// reply lost, and the recipe finds the node is its own (run checks that
// too, and fails if the fault did not happen).
func TestOnFake(t *testing.T) {
	for _, seed := range []string{"1", "2", "3"} {
		var out bytes.Buffer
		err := run(context.Background(), []string{"-seed", seed}, &out)
		if s := out.String(); err != nil || !strings.HasSuffix(s, "\nOK\n") || !lostReplyFoundOwn(s) {
			t.Fatalf("seed %s: %v\n%s", seed, err, s)
		}
	}
}

// lostReplyFoundOwn says whether out shows worker 1's create of job 0
// applied, its reply lost, and the node then found to be worker 1's.
func lostReplyFoundOwn(out string) bool {
	return strings.Contains(out, "fault: worker 1's create of /claim/job-0: applied, its reply lost\n") &&
		strings.Contains(out, "/claim/job-0: worker 1 created again after the lost reply, got NodeExists, and found the node its own\n") &&
		strings.Contains(out, "/claim/job-0: worker 1\n")
}

// With one worker and one job too, its create is applied and the reply
// lost: the recipe must find the node is its own.
func TestLostReplyFoundOwn(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-workers", "1", "-jobs", "1"}, &out); err != nil {
		t.Fatalf("%v\n%s", err, &out)
	}
	if s := out.String(); !lostReplyFoundOwn(s) {
		t.Fatalf("the lost reply was not settled as the worker's own:\n%s", s)
	}
}

// On a real server there is no fault, and the run deletes every node it
// made (RealServer checks).
func TestOnRealServer(t *testing.T) {
	s := extest.Run(t, run, extest.RealServer(t), "/job-0: worker", "/job-4: worker")
	if strings.Contains(s, "fault:") {
		t.Fatalf("faults on a real server:\n%s", s)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-workers", "0"}, {"-jobs", "0"}, {"extra"}, {"-nosuchflag"}, {"-timeout", "soon"},
		{"-zk", "127.0.0.1:1", "-timeout", "2s"}} { // the last: a server that is down, given up after -timeout
		var out bytes.Buffer
		if err := run(context.Background(), args, &out); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	// A connect string that does not parse is refused before any dial.
	extest.RefusedConnectStrings(t, run)
}

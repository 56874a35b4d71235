package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The program on the embedded server: every job gets one owner, whose
// name its node holds, and every release deletes the node (run checks
// both and fails otherwise).
func TestOnFake(t *testing.T) {
	for _, seed := range []string{"1", "2", "3"} {
		var out bytes.Buffer
		if err := run(context.Background(), []string{"-seed", seed}, &out); err != nil || !strings.HasSuffix(out.String(), "\nOK\n") {
			t.Fatalf("seed %s: %v\n%s", seed, err, &out)
		}
	}
}

// With one worker, its first create of a job is applied and the reply
// lost: the recipe must find the node is its own.
func TestLostReplyFoundOwn(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-workers", "1", "-jobs", "1"}, &out); err != nil {
		t.Fatalf("%v\n%s", err, &out)
	}
	if s := out.String(); !strings.Contains(s, "create of /claim/job-0: its reply (error <nil>) lost") || !strings.Contains(s, "/claim/job-0: worker 1\n") {
		t.Fatalf("the lost reply was not settled as the worker's own:\n%s", s)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-workers", "0"}, {"-jobs", "0"}, {"extra"}, {"-nosuchflag"}} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

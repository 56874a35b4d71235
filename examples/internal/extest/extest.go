// Package extest holds what the examples' tests share: run an example's
// run function and insist on its verified summary, point it at a real
// server, and check that bad flags are refused.
package extest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// RunFunc is an example's entry point: main calls it with os.Args[1:] and
// os.Stdout.
type RunFunc func(ctx context.Context, args []string, out io.Writer) error

// Run runs the example with args and returns its output. The test fails
// if run returns an error, if the output has a line saying FAILED, if it
// does not end with the line "OK", or if it lacks any of want.
func Run(t testing.TB, run RunFunc, args []string, want ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), args, &out); err != nil {
		t.Fatalf("run %q: %v\n%s", args, err, out.String())
	}
	s := out.String()
	if strings.Contains(s, "FAILED") || !strings.HasSuffix(s, "\nOK\n") {
		t.Fatalf("run %q: no verified summary:\n%s", args, s)
	}
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Fatalf("run %q: output lacks %q:\n%s", args, w, s)
		}
	}
	return s
}

// Seeds are the embedded-server seeds every example is tested on.
var Seeds = []string{"1", "2", "3"}

// RealServer starts a standalone ZooKeeper for the test (skipping it
// unless ZK_REQUIRED=1, see zkserver.Require) and returns the -zk flags
// that point an example at it.
func RealServer(t *testing.T) []string {
	t.Helper()
	zkserver.Require(t)
	c := zkserver.Standalone(t, zkserver.Options{})
	return []string{"-zk", strings.Join(c.Addrs(), ",")}
}

// Refused checks that run returns an error for each set of arguments.
func Refused(t testing.TB, run RunFunc, argSets ...[]string) {
	t.Helper()
	for _, args := range argSets {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out); err == nil {
			t.Errorf("run %q accepted:\n%s", args, out.String())
		}
	}
}

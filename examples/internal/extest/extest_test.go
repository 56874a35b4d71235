package extest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a testing.TB that records failures instead of stopping.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()                   {}
func (r *recorder) Errorf(string, ...any)     { r.failed = true }
func (r *recorder) Fatalf(f string, a ...any) { r.failed = true; panic(r) }

// outcome runs fn against a recorder and says whether it failed.
func outcome(t *testing.T, fn func(testing.TB)) (failed bool) {
	r := &recorder{TB: t}
	defer func() {
		if p := recover(); p != nil && p != any(r) {
			panic(p)
		}
		failed = r.failed
	}()
	fn(r)
	return r.failed
}

func printing(text string, err error) RunFunc {
	return func(_ context.Context, args []string, out io.Writer) error {
		fmt.Fprint(out, text)
		if len(args) > 0 && args[0] == "bad" {
			return errors.New("bad flag")
		}
		return err
	}
}

func TestRun(t *testing.T) {
	good := printing("3 terms\nOK\n", nil)
	if s := Run(t, good, nil, "3 terms"); s != "3 terms\nOK\n" {
		t.Fatalf("output %q", s)
	}
	for name, fn := range map[string]func(testing.TB){
		"error":                   func(tb testing.TB) { Run(tb, printing("OK\n", errors.New("x")), nil) },
		"FAILED":                  func(tb testing.TB) { Run(tb, printing("FAILED: x\nOK\n", nil), nil) },
		"no OK":                   func(tb testing.TB) { Run(tb, printing("3 terms\n", nil), nil) },
		"OK mid-line":             func(tb testing.TB) { Run(tb, printing("NOT OK\n", nil), nil) },
		"missing want":            func(tb testing.TB) { Run(tb, good, nil, "4 terms") },
		"accepted":                func(tb testing.TB) { Refused(tb, good, []string{"fine"}) },
		"connect string accepted": func(tb testing.TB) { RefusedConnectStrings(tb, good) },
		"connect string dialed":   func(tb testing.TB) { RefusedConnectStrings(tb, printing("", errors.New("connecting: refused"))) },
	} {
		if !outcome(t, fn) {
			t.Errorf("%s: not reported", name)
		}
	}
	if outcome(t, func(tb testing.TB) { Refused(tb, good, []string{"bad"}) }) {
		t.Error("a refused flag reported as accepted")
	}
	unparsed := func(_ context.Context, args []string, _ io.Writer) error {
		s := args[len(args)-1]
		_, _, err := zkadapter.ParseConnectString(s)
		return fmt.Errorf("-zk %q: %w", s, err)
	}
	if outcome(t, func(tb testing.TB) { RefusedConnectStrings(tb, unparsed) }) {
		t.Error("a connect string refused as it should be reported as accepted")
	}
	for _, s := range BadConnectStrings {
		if _, _, err := zkadapter.ParseConnectString(s); err == nil {
			t.Errorf("BadConnectStrings: %q parses", s)
		}
	}
}

// cleanups is a recorder that keeps what is given to Cleanup, to run it
// when the test says, and has the name the test gives it.
type cleanups struct {
	recorder
	name string
	fns  []func()
}

func (c *cleanups) Name() string     { return c.name }
func (c *cleanups) Cleanup(f func()) { c.fns = append(c.fns, f) }

// Chroot's check, on a real server: a run that left nothing passes; a
// node left under the root, or beside it, fails the test.
func TestChroot(t *testing.T) {
	zkserver.Require(t)
	c := zkserver.Standalone(t, zkserver.Options{})
	ctx := t.Context()
	for _, tc := range []struct {
		name  string
		leave []string // nodes made after Chroot, under the root (rooted) or not
		fails bool
	}{
		{"clean", nil, false},
		{"under", []string{"{root}/a", "{root}/a/b"}, true},
		{"beside", []string{"/beside"}, true},
	} {
		r := &cleanups{recorder: recorder{TB: t}, name: "Chroot/" + tc.name}
		connect := Chroot(r, c, c.ConnectString())
		root := "/ex-Chroot-" + tc.name
		if want := c.ConnectString() + root; connect != want {
			t.Fatalf("%s: Chroot = %q, want %q", tc.name, connect, want)
		}
		err := onServer(ctx, c, func(ex *executor.Executor) error {
			if _, err := executor.Await(ctx, ex, task.Exists(root)); err != nil {
				return err
			}
			for _, p := range tc.leave {
				if _, err := executor.Await(ctx, ex, task.Create(strings.ReplaceAll(p, "{root}", root), nil, task.Persistent)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range slices.Backward(r.fns) {
			f()
		}
		if r.failed != tc.fails {
			t.Errorf("%s: failed %v, want %v", tc.name, r.failed, tc.fails)
		}
		// The next case starts clean.
		err = onServer(ctx, c, func(ex *executor.Executor) error {
			for _, p := range slices.Backward(tc.leave) {
				if _, err := executor.Await(ctx, ex, task.Delete(strings.ReplaceAll(p, "{root}", root), task.AnyVersion)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

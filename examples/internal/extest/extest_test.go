package extest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"go.uber.org/goleak"
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
		"error":        func(tb testing.TB) { Run(tb, printing("OK\n", errors.New("x")), nil) },
		"FAILED":       func(tb testing.TB) { Run(tb, printing("FAILED: x\nOK\n", nil), nil) },
		"no OK":        func(tb testing.TB) { Run(tb, printing("3 terms\n", nil), nil) },
		"OK mid-line":  func(tb testing.TB) { Run(tb, printing("NOT OK\n", nil), nil) },
		"missing want": func(tb testing.TB) { Run(tb, good, nil, "4 terms") },
		"accepted":     func(tb testing.TB) { Refused(tb, good, []string{"fine"}) },
	} {
		if !outcome(t, fn) {
			t.Errorf("%s: not reported", name)
		}
	}
	if outcome(t, func(tb testing.TB) { Refused(tb, good, []string{"bad"}) }) {
		t.Error("a refused flag reported as accepted")
	}
}

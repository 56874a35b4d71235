package task

import (
	"errors"
	"fmt"
	"testing"
)

// asOpError is an error that says, through an As method, that it is an
// *OpError without wrapping one.
type asOpError struct{ oe *OpError }

func (e asOpError) Error() string { return "as " + e.oe.Error() }
func (e asOpError) As(target any) bool {
	if p, ok := target.(**OpError); ok {
		*p = e.oe
		return true
	}
	return false
}

// opErr leaves an error that already names its operation as it is and
// wraps any other: the same verdict as errors.As(err, new(*OpError)) on
// every shape of error tree (wrapped once or twice, joined, an As method,
// an Unwrap that returns nil).
func TestOpErrMatchesErrorsAs(t *testing.T) {
	inner := &OpError{Op: "get", Path: "/a", Err: ErrNoNode}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"sentinel", ErrNoNode},
		{"code", Code(-9999)},
		{"op error", inner},
		{"wrapped", fmt.Errorf("x: %w", inner)},
		{"wrapped twice", fmt.Errorf("y: %w", fmt.Errorf("x: %w", inner))},
		{"wrapped sentinel", fmt.Errorf("x: %w", ErrNoNode)},
		{"joined", errors.Join(ErrBadVersion, inner)},
		{"joined without", errors.Join(ErrBadVersion, ErrNoNode)},
		{"multi wrapped", fmt.Errorf("%w and %w", ErrNoNode, inner)},
		{"as method", asOpError{inner}},
		{"multi error", &MultiError{Index: 1, Err: inner}},
		{"unwrap nil", fmt.Errorf("plain %v", inner)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var oe *OpError
			want := errors.As(tc.err, &oe)
			got := opErr("set", "/b", tc.err)
			if want {
				if got != tc.err {
					t.Fatalf("opErr(%v) = %v, want the error as it is", tc.err, got)
				}
				return
			}
			w, ok := got.(*OpError)
			if !ok || w.Op != "set" || w.Path != "/b" || w.Err != tc.err {
				t.Fatalf("opErr(%v) = %#v, want an *OpError for set /b wrapping it", tc.err, got)
			}
		})
	}
	if opErr("get", "/a", nil) != nil {
		t.Fatal("opErr(nil) is not nil")
	}
}

// Wrapping a server's error allocates the *OpError and nothing else.
func TestOpErrAllocs(t *testing.T) {
	var sink error
	n := testing.AllocsPerRun(100, func() { sink = opErr("get", "/a", ErrNoNode) })
	if n > 1 {
		t.Errorf("opErr of a sentinel: %v allocations, want 1", n)
	}
	n = testing.AllocsPerRun(100, func() { sink = opErr("get", "/a", sink) })
	if n > 0 {
		t.Errorf("opErr of an *OpError: %v allocations, want 0", n)
	}
}

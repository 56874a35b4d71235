package task_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zkflow/zkflow/task"
)

func TestValidatePath(t *testing.T) {
	cases := []struct {
		path string
		seq  bool
		ok   bool
	}{
		{"/", false, true},
		{"/a", false, true},
		{"/a/b/c", false, true},
		{"/a.b", false, true},
		{"/...", false, true},
		{"/a/..b", false, true},
		{"/zookeeper", false, true},
		{"/é", false, true},
		{"", false, false},
		{"a", false, false},
		{"/a/", false, false},
		{"/a/", true, true}, // sequential: the server appends the number
		{"/", true, true},
		{"//", false, false},
		{"/a//b", false, false},
		{"/.", false, false},
		{"/..", false, false},
		{"/a/./b", false, false},
		{"/a/../b", false, false},
		{"/a\x00b", false, false},
		{"/a\x1f", false, false},
		{"/a\u007f", false, false},
		{"/a\u009f", false, false},
		{"/a\ud7ff", false, true},
		{"/a\ue000", false, false},
		{"/a\uf8ff", false, false},
		{"/a\uf900", false, true},
		{"/a\ufff0", false, false},
		{"/a\U0001F600", false, false}, // a surrogate pair in Java
		{"/a\xff", false, false},
	}
	for _, tc := range cases {
		err := task.ValidatePath(tc.path, tc.seq)
		if (err == nil) != tc.ok {
			t.Errorf("ValidatePath(%q, %v) = %v, want ok=%v", tc.path, tc.seq, err, tc.ok)
		}
		if err != nil && !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("ValidatePath(%q): %v does not wrap ErrInvalidPath", tc.path, err)
		}
	}
}

func FuzzValidatePath(f *testing.F) {
	for _, s := range []string{"/", "/a/b", "/a//b", "/./", "/a\x00", "/\U0001F600"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := task.ValidatePath(p, false)
		if err != nil {
			if !errors.Is(err, task.ErrInvalidPath) {
				t.Fatalf("%q: %v", p, err)
			}
			return
		}
		// A valid path is absolute, valid UTF-8, with non-empty, non-dot
		// components, and its parent is valid too.
		if !strings.HasPrefix(p, "/") || !utf8.ValidString(p) {
			t.Fatalf("accepted %q", p)
		}
		if p != "/" {
			for _, c := range strings.Split(p[1:], "/") {
				if c == "" || c == "." || c == ".." {
					t.Fatalf("accepted %q", p)
				}
			}
			if task.ValidatePath(task.Parent(p), false) != nil {
				t.Fatalf("parent of valid %q is invalid", p)
			}
		}
	})
}

func TestErrors(t *testing.T) {
	err := error(&task.OpError{Op: "set", Path: "/a", Err: task.ErrBadVersion})
	if !errors.Is(err, task.ErrBadVersion) || err.Error() != "zk set /a: version conflict" {
		t.Fatalf("%v", err)
	}
	if c, ok := task.CodeOf(err); !ok || c != task.CodeBadVersion {
		t.Fatalf("CodeOf = %v %v", c, ok)
	}
	unknown := &task.OpError{Op: "get", Path: "/a", Err: task.Code(-999)}
	if c, ok := task.CodeOf(unknown); !ok || c != -999 || !strings.Contains(unknown.Error(), "-999") {
		t.Fatalf("unknown code lost: %v", unknown)
	}
	if !errors.Is(task.ErrDeadlineExceeded, context.DeadlineExceeded) || !errors.Is(task.ErrCanceled, context.Canceled) {
		t.Fatal("deadline/cancel do not match context's errors")
	}
	if !task.IsRetryable(&task.OpError{Err: task.ErrConnectionLoss}) || !task.IsRetryable(task.ErrNotSent) ||
		task.IsRetryable(task.ErrSessionExpired) {
		t.Fatal("IsRetryable")
	}
	m := &task.OpError{Op: "multi", Path: "/x", Err: &task.MultiError{Index: 1, Err: task.ErrNoNode}}
	if !errors.Is(m, task.ErrNoNode) {
		t.Fatal("multi error does not unwrap")
	}
}

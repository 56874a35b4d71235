package chroot

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		in, out string
		bad     bool
	}{{"", "", false}, {"/", "", false}, {"/app", "/app", false}, {"/a/b", "/a/b", false},
		{"app", "", true}, {"/app/", "", true}, {"/a//b", "", true}} {
		got, err := Check(tc.in)
		if (err != nil) != tc.bad || got != tc.out {
			t.Errorf("Check(%q) = %q, %v", tc.in, got, err)
		}
	}
}

func TestPaths(t *testing.T) {
	for _, tc := range []struct {
		p    string
		seq  bool
		full string
	}{{"/", false, "/app"}, {"/", true, "/app/"}, {"/a", false, "/app/a"}, {"/a/", true, "/app/a/"}} {
		if got := Full("/app", tc.p, tc.seq); got != tc.full {
			t.Errorf("Full(%q, %v) = %q, want %q", tc.p, tc.seq, got, tc.full)
		}
	}
	for in, want := range map[string]string{"/app": "/", "/app/a": "/a", "/apple": "/apple", "/other": "/other"} {
		if got := Strip("/app", in); got != want {
			t.Errorf("Strip(%q) = %q, want %q", in, got, want)
		}
	}
	if Full("", "/a", false) != "/a" || Strip("", "/a") != "/a" {
		t.Error("no root changed a path")
	}
}

// Every request type of package task has a mapping: Request puts its path
// under the root and leaves the caller's request alone. The list of types
// is read from task's source, so a new request type fails here until it
// is mapped.
func TestRequestCoversEveryType(t *testing.T) {
	reqs := map[string]task.Request{
		"CreateRequest":        &task.CreateRequest{Path: "/a"},
		"DeleteRequest":        &task.DeleteRequest{Path: "/a"},
		"ExistsRequest":        &task.ExistsRequest{Path: "/a"},
		"GetDataRequest":       &task.GetDataRequest{Path: "/a"},
		"SetDataRequest":       &task.SetDataRequest{Path: "/a"},
		"GetChildrenRequest":   &task.GetChildrenRequest{Path: "/a"},
		"SyncRequest":          &task.SyncRequest{Path: "/a"},
		"CheckRequest":         &task.CheckRequest{Path: "/a"},
		"GetACLRequest":        &task.GetACLRequest{Path: "/a"},
		"SetACLRequest":        &task.SetACLRequest{Path: "/a"},
		"AddWatchRequest":      &task.AddWatchRequest{Path: "/a"},
		"RemoveWatchesRequest": &task.RemoveWatchesRequest{Path: "/a"},
		"MultiRequest":         &task.MultiRequest{Ops: []task.MultiOp{&task.CreateRequest{Path: "/a"}, &task.CheckRequest{Path: "/"}}},
	}
	files, err := filepath.Glob("../../task/*.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`func \(\*(\w+)\) isRequest\(\)`)
	found := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllSubmatch(b, -1) {
			found++
			if _, ok := reqs[string(m[1])]; !ok {
				t.Errorf("task.%s has no case here (and maybe none in Request)", m[1])
			}
		}
	}
	if found != len(reqs) || found == 0 {
		t.Errorf("task has %d request types, the table %d", found, len(reqs))
	}
	for name, req := range reqs {
		got := Request("/app", req)
		if m, ok := got.(*task.MultiRequest); ok {
			if m.Ops[0].NodePath() != "/app/a" || m.Ops[1].NodePath() != "/app" {
				t.Errorf("%s: ops %s %s", name, m.Ops[0].NodePath(), m.Ops[1].NodePath())
			}
			if req.(*task.MultiRequest).Ops[0].NodePath() != "/a" {
				t.Errorf("%s: the caller's request changed", name)
			}
			continue
		}
		if got.NodePath() != "/app/a" || req.NodePath() != "/a" {
			t.Errorf("%s: %s (the original now %s)", name, got.NodePath(), req.NodePath())
		}
	}
}

// A multi's ops are mapped as Request maps each alone, whatever their
// number and kinds (its copy has room for four ops and one check), and
// the caller's ops are left alone.
func TestMultiOps(t *testing.T) {
	ops := []task.MultiOp{
		&task.CheckRequest{Path: "/", Version: 3},
		&task.CreateRequest{Path: "/", Mode: task.PersistentSequential},
		&task.CheckRequest{Path: "/c", Version: 4},
		&task.DeleteRequest{Path: "/d", Version: 5},
		&task.SetDataRequest{Path: "/e", Data: []byte("x")},
	}
	for n := range len(ops) + 1 {
		m := Request("/app", &task.MultiRequest{Ops: ops[:n]}).(*task.MultiRequest)
		if len(m.Ops) != n {
			t.Fatalf("%d ops: got %d", n, len(m.Ops))
		}
		for i, op := range m.Ops {
			want := Request("/app", ops[i])
			if op == ops[i] || op.NodePath() != want.NodePath() || fmt.Sprintf("%T", op) != fmt.Sprintf("%T", want) {
				t.Errorf("%d ops: op %d is %T %s, want a copy %T %s", n, i, op, op.NodePath(), want, want.NodePath())
			}
		}
		if n >= 3 && (m.Ops[0].(*task.CheckRequest).Version != 3 || m.Ops[2].(*task.CheckRequest).Version != 4) {
			t.Errorf("%d ops: checks %+v %+v", n, m.Ops[0], m.Ops[2])
		}
	}
	if ops[0].NodePath() != "/" || ops[2].NodePath() != "/c" {
		t.Error("the caller's ops changed")
	}
}

func TestResponse(t *testing.T) {
	r := Response("/app", task.Response{Path: "/app/x", Results: []task.MultiResult{{Path: "/app/y"}, {}}})
	if r.Path != "/x" || r.Results[0].Path != "/y" || r.Results[1].Path != "" {
		t.Errorf("Response = %+v", r)
	}
}

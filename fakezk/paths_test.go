package fakezk_test

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// walkPaths lists every path by walking Children from "/", in order.
func walkPaths(t *testing.T, srv *fakezk.Server) []string {
	t.Helper()
	var out []string
	var rec func(p string)
	rec = func(p string) {
		out = append(out, p)
		names, ok := srv.Children(p)
		if !ok {
			t.Fatalf("Children(%s): no node, but its parent lists it", p)
		}
		for _, n := range names {
			rec(task.Join(p, n))
		}
	}
	rec("/")
	slices.Sort(out)
	return out
}

// TestPathsFollowTree checks that Paths and Children agree with the tree
// after every kind of change: creates, deletes, a multi undone by a
// failed op, ephemerals removed with their session, and a wipe; Paths is
// read after each (its ordered index is kept between changes).
func TestPathsFollowTree(t *testing.T) {
	clk := fakezk.NewClock(time.Time{})
	srv := fakezk.New(fakezk.Config{Clock: clk})
	defer srv.Close()
	c := srv.Connect(fakezk.ConnConfig{Timeout: 4 * time.Second})
	if err := c.Start(func(task.Event) {}); err != nil {
		t.Fatal(err)
	}
	do := func(req task.Request) task.Response {
		var last task.Response
		c.Do(req, func(r task.Response) { last = r }, nil)
		return last
	}
	create := func(p string, mode task.CreateMode) *task.CreateRequest {
		return &task.CreateRequest{Path: p, ACL: task.OpenACL, Mode: mode}
	}
	want := []string{"/", "/zookeeper", "/zookeeper/config", "/zookeeper/quota"}
	check := func(step string) {
		t.Helper()
		got := srv.Paths()
		if !slices.Equal(got, want) {
			t.Fatalf("%s: Paths %v, want %v", step, got, want)
		}
		if walked := walkPaths(t, srv); !slices.Equal(walked, want) {
			t.Fatalf("%s: Children walk %v, want %v", step, walked, want)
		}
		if err := srv.CheckInvariants(); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		got[0] = "changed by the caller" // a caller's copy: the next call is not affected
	}
	add := func(ps ...string) { want = append(want, ps...); slices.Sort(want) }
	drop := func(ps ...string) {
		want = slices.DeleteFunc(want, func(p string) bool { return slices.Contains(ps, p) })
	}
	check("fresh")
	for _, p := range []string{"/b", "/a", "/b/y", "/b/x"} {
		if r := do(create(p, task.Persistent)); r.Err != nil {
			t.Fatal(r.Err)
		}
		add(p)
		check("create " + p)
	}
	if names, ok := srv.Children("/b"); !ok || !slices.Equal(names, []string{"x", "y"}) {
		t.Fatalf("Children(/b) = %v, %v; want [x y], true", names, ok)
	}
	if names, ok := srv.Children("/nope"); ok || names != nil {
		t.Fatalf("Children(/nope) = %v, %v; want nil, false", names, ok)
	}
	if r := do(&task.DeleteRequest{Path: "/b/x", Version: -1}); r.Err != nil {
		t.Fatal(r.Err)
	}
	drop("/b/x")
	check("delete /b/x")
	// A multi whose second op fails: its create is undone.
	r := do(&task.MultiRequest{Ops: []task.MultiOp{create("/c", task.Persistent), &task.DeleteRequest{Path: "/a", Version: 7}}})
	if r.Err == nil {
		t.Fatal("multi with a bad version applied")
	}
	check("failed multi (create undone)")
	// A multi whose delete is undone.
	r = do(&task.MultiRequest{Ops: []task.MultiOp{&task.DeleteRequest{Path: "/a", Version: -1}, &task.CheckRequest{Path: "/a", Version: 0}}})
	if r.Err == nil {
		t.Fatal("multi checking a deleted node applied")
	}
	check("failed multi (delete undone)")
	if r := do(create("/b/e", task.Ephemeral)); r.Err != nil {
		t.Fatal(r.Err)
	}
	add("/b/e")
	check("ephemeral")
	c.Close()
	drop("/b/e")
	srv.RunUntilIdle()
	check("session closed")
	srv.Wipe()
	want = []string{"/", "/zookeeper", "/zookeeper/config", "/zookeeper/quota"}
	check("wipe")
}

// TestSeqName checks the sequence suffix against fmt's %010d over the
// int32 range's edges.
func TestSeqName(t *testing.T) {
	for _, cv := range []int32{0, 1, 9, 10, 99, 12345, 999999999, 1000000000, math.MaxInt32 - 1, math.MaxInt32, -1, -10, math.MinInt32} {
		if got, want := fakezk.SeqName("/a/n-", cv), fmt.Sprintf("/a/n-%010d", cv); got != want {
			t.Errorf("seqName(%d) = %q, want %q", cv, got, want)
		}
	}
}

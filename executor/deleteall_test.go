package executor_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// runExec runs an executor on conn until the test ends.
func runExec(t *testing.T, conn task.Conn) *executor.Executor {
	t.Helper()
	ex, err := executor.New(executor.Config{Conn: conn, OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(context.Background()) }()
	t.Cleanup(func() { ex.Close(); <-done })
	return ex
}

// lateChild creates a child of path on the server as the first delete of
// path is sent, after its children were listed: the delete fails with
// NotEmpty.
type lateChild struct {
	task.Conn
	srv  *fakezk.Server
	path string
	done bool
}

func (c *lateChild) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if d, ok := req.(*task.DeleteRequest); ok && d.Path == c.path && !c.done {
		c.done = true
		if err := c.srv.AdminCreate(c.path+"/late", nil, 0); err != nil {
			panic(err)
		}
	}
	c.Conn.Do(req, done, watch)
}

// DeleteAll deletes a tree, children first, and counts what it deleted;
// a missing path is no error; a node that gains a child after it was
// listed is listed again; "/" and /zookeeper are refused, nothing sent.
func TestDeleteAll(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	lc := &lateChild{Conn: srv.Connect(fakezk.ConnConfig{}), srv: srv, path: "/t/b"}
	ex := runExec(t, lc)
	ctx := context.Background()
	for _, p := range []string{"/t", "/t/a", "/t/a/1", "/t/a/2", "/t/b", "/t/b/1", "/keep"} {
		if err := srv.AdminCreate(p, []byte("x"), 0); err != nil {
			t.Fatal(err)
		}
	}
	n, err := ex.DeleteAll(ctx, "/t")
	if err != nil || n != 7 {
		t.Fatalf("DeleteAll(/t) = %d, %v; want 7 nodes (6, and the child /t/b gained after it was listed)", n, err)
	}
	if st, _ := ex.Exists(ctx, "/t"); st != nil {
		t.Fatal("/t is still there")
	}
	if st, _ := ex.Exists(ctx, "/keep"); st == nil {
		t.Fatal("/keep, beside the tree, was deleted")
	}
	if n, err := ex.DeleteAll(ctx, "/t"); err != nil || n != 0 {
		t.Fatalf("DeleteAll of a missing path = %d, %v; want 0, nil", n, err)
	}
	for _, p := range []string{"/", "/zookeeper", "/zookeeper/config"} {
		if _, err := ex.DeleteAll(ctx, p); !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("DeleteAll(%q) = %v; want task.ErrInvalidArgument", p, err)
		}
	}
	if _, err := ex.DeleteAll(ctx, "bad"); !errors.Is(err, task.ErrInvalidPath) {
		t.Errorf("DeleteAll of an invalid path = %v; want task.ErrInvalidPath", err)
	}
}

// An error midway (an ACL refusing a delete) ends DeleteAll with it and
// the count of the nodes deleted before.
func TestDeleteAllStopsAtARefusal(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ex := runExec(t, srv.Connect(fakezk.ConnConfig{}))
	ctx := context.Background()
	for _, p := range []string{"/t", "/t/a", "/t/locked", "/t/locked/x"} {
		if err := srv.AdminCreate(p, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	// Deleting a child takes DELETE on its parent.
	if err := srv.AdminSetACL("/t/locked", []task.ACL{{Perms: task.PermRead, Scheme: "world", ID: "anyone"}}); err != nil {
		t.Fatal(err)
	}
	n, err := ex.DeleteAll(ctx, "/t")
	if !errors.Is(err, task.ErrNoAuth) || n != 1 {
		t.Fatalf("DeleteAll(/t) = %d, %v; want 1 (/t/a) and task.ErrNoAuth", n, err)
	}
}

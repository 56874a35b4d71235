package executor_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// The plain operations' blocking face: each call is one request with the
// server's outcome, its typed errors, and Await's refusals.
func TestPlainOperations(t *testing.T) {
	ex, _, _ := newServerExec(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ex.Run(ctx) }()
	defer func() { ex.Close(); <-done }()

	if name, err := ex.Create(ctx, "/app", []byte("v1"), task.Persistent); err != nil || name != "/app" {
		t.Fatalf("Create = %q, %v", name, err)
	}
	if _, err := ex.Create(ctx, "/app", nil, task.Persistent); !errors.Is(err, task.ErrNodeExists) {
		t.Fatalf("second Create: %v, want task.ErrNodeExists", err)
	}
	seq, err := ex.Create(ctx, "/app/job-", nil, task.PersistentSequential)
	if err != nil || seq != "/app/job-0000000000" {
		t.Fatalf("sequential Create = %q, %v", seq, err)
	}
	d, err := ex.Get(ctx, "/app")
	if err != nil || string(d.Data) != "v1" || d.Stat.NumChildren != 1 {
		t.Fatalf("Get = %q (%d children), %v", d.Data, d.Stat.NumChildren, err)
	}
	st, err := ex.Set(ctx, "/app", []byte("v2"), d.Stat.Version)
	if err != nil || st.Version != d.Stat.Version+1 {
		t.Fatalf("Set = version %d, %v", st.Version, err)
	}
	if _, err := ex.Set(ctx, "/app", []byte("v3"), d.Stat.Version); !errors.Is(err, task.ErrBadVersion) {
		t.Fatalf("Set at a stale version: %v, want task.ErrBadVersion", err)
	}
	cl, err := ex.Children(ctx, "/app")
	if err != nil || !slices.Equal(cl.Names, []string{"job-0000000000"}) {
		t.Fatalf("Children = %v, %v", cl.Names, err)
	}
	if err := ex.Sync(ctx, "/app"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	res, err := ex.Multi(ctx, task.CheckOp("/app", st.Version), task.DeleteOp(seq, task.AnyVersion))
	if err != nil || len(res) != 2 {
		t.Fatalf("Multi = %v, %v", res, err)
	}
	if err := ex.Delete(ctx, seq, task.AnyVersion); !errors.Is(err, task.ErrNoNode) {
		t.Fatalf("Delete of a deleted node: %v, want task.ErrNoNode", err)
	}
	if err := ex.Delete(ctx, "/app", task.AnyVersion); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if s, err := ex.Exists(ctx, "/app"); s != nil || err != nil {
		t.Fatalf("Exists of a deleted node = %v, %v; want nil, nil", s, err)
	}
	if _, err := ex.Get(ctx, "no-slash"); !errors.Is(err, task.ErrInvalidPath) {
		t.Fatalf("Get of an invalid path: %v, want task.ErrInvalidPath", err)
	}

	// A ctx that has ended: the call returns its error, nothing waits.
	ended, stop := context.WithCancel(ctx)
	stop()
	if _, err := ex.Create(ended, "/late", nil, task.Persistent); !errors.Is(err, context.Canceled) {
		t.Fatalf("Create with an ended ctx: %v, want context.Canceled", err)
	}
	// On the executor's goroutine the calls refuse rather than deadlock.
	onEx, err := executor.Await(ctx, ex, task.Func(func(*task.Scope) (error, error) {
		_, err := ex.Get(ctx, "/")
		return err, nil
	}))
	if err != nil || !errors.Is(onEx, executor.ErrOnExecutor) {
		t.Fatalf("Get on the executor goroutine: %v, %v; want ErrOnExecutor", onEx, err)
	}
	var nilEx *executor.Executor
	if _, err := nilEx.Get(ctx, "/"); !errors.Is(err, executor.ErrNilExecutor) {
		t.Fatalf("Get on a nil Executor: %v, want ErrNilExecutor", err)
	}
}

// A plain operation whose context ends names the operation and its path,
// and still matches the context's error under errors.Is.
func TestPlainOperationsNameTheirWait(t *testing.T) {
	ex, srv, conn := newServerExec(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ex.Run(ctx) }()
	defer func() { ex.Close(); <-done }()
	if err := ex.Sync(ctx, "/"); err != nil {
		t.Fatal(err)
	}

	ended, stop := context.WithCancel(ctx)
	stop()
	if _, err := ex.Create(ended, "/late", nil, task.Persistent); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "create /late") {
		t.Fatalf("Create with an ended ctx: %v, want context.Canceled naming create /late", err)
	}
	srv.Partition(conn, time.Minute, false)
	short, stop2 := context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop2()
	if _, err := ex.Get(short, "/app/config"); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "get /app/config") {
		t.Fatalf("Get through a partition: %v, want a deadline naming get /app/config", err)
	}
}

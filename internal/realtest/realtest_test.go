package realtest_test

import (
	"context"
	"fmt"
	"net"
	"path"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A client's session is live while it runs: an ephemeral node it creates
// is seen by another client; after Stop (twice: idempotent) the node is
// gone and the stopped executor runs nothing more.
func TestRealClientStop(t *testing.T) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, zkserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	root := fmt.Sprintf("/realtest-%d", time.Now().UnixNano())

	a := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{})
	b := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{SessionTimeout: 4 * time.Second, LogDetached: true})
	if a.Conn == nil || b.Conn == nil {
		t.Fatal("client without a connection")
	}
	if _, err := executor.Await(ctx, b.Ex, task.Create(root, nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	if _, err := executor.Await(ctx, a.Ex, task.Create(root+"/e", nil, task.Ephemeral)); err != nil {
		t.Fatal(err)
	}
	st, err := executor.Await(ctx, b.Ex, task.Exists(root+"/e"))
	if err != nil || st == nil {
		t.Fatalf("ephemeral node before Stop: %v, %v", st, err)
	}

	// Wait on a watch for the node to go when a's session ends.
	w, err := executor.Await(ctx, b.Ex, task.ExistsW(root+"/e"))
	if err != nil {
		t.Fatal(err)
	}
	a.Stop()
	a.Stop()
	if _, err := executor.Await(ctx, b.Ex, w.Watch.Wait()); err != nil {
		t.Fatalf("watch: %v", err)
	}
	st, err = executor.Await(ctx, b.Ex, task.Exists(root+"/e"))
	if err != nil || st != nil {
		t.Fatalf("ephemeral node after Stop: %v, %v; want gone", st, err)
	}
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	if _, err := executor.Await(short, a.Ex, task.Exists(root)); err == nil {
		t.Fatal("a stopped client ran a chain")
	}
}

// fatalTB records Fatalf and ends the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// Dialing an address where no server listens fails the test with a
// message naming the address, within the context's deadline; no client
// and no goroutine is left.
func TestDialDownServerFails(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ft := &fatalTB{TB: t}
	var c *realtest.Client
	done := make(chan struct{})
	go func() {
		defer close(done)
		c = realtest.Dial(ft, ctx, []string{addr}, realtest.Options{})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Dial to a down server did not return")
	}
	if c != nil {
		t.Fatal("Dial to a down server returned a client")
	}
	if !strings.Contains(ft.msg, addr) {
		t.Fatalf("failure %q does not name %s", ft.msg, addr)
	}
}

// errorTB records Errorf instead of failing the test.
type errorTB struct {
	testing.TB
	errs []string
}

func (e *errorTB) Helper() {}
func (e *errorTB) Errorf(format string, args ...any) {
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

// MakeRoot makes a fresh two-level root; CheckRoot passes once nodes are
// below it and nothing is beside it, and reports a root left empty and a
// node outside it. (Written with clients that have no root, so that it
// checks the checker, whatever zkadapter's Root does.)
func TestMakeAndCheckRoot(t *testing.T) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, zkserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	root := realtest.MakeRoot(t, ctx, srv.Addrs(), "mk")
	if parts := strings.Split(root, "/"); len(parts) != 3 || !strings.HasPrefix(parts[1], "mk-") || parts[2] != "app" {
		t.Fatalf("root %q, want /mk-<random>/app", root)
	}
	et := &errorTB{TB: t}
	realtest.CheckRoot(et, ctx, srv.Addrs(), root)
	if len(et.errs) != 1 || !strings.Contains(et.errs[0], "nothing below the root") {
		t.Errorf("an empty root: %q", et.errs)
	}
	c := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{})
	if _, err := executor.Await(ctx, c.Ex, task.Create(root+"/x", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	et = &errorTB{TB: t}
	realtest.CheckRoot(et, ctx, srv.Addrs(), root)
	if len(et.errs) != 0 {
		t.Errorf("a root with a node below it: %q", et.errs)
	}
	for _, stray := range []string{"/stray", strings.TrimSuffix(root, "/app") + "/beside"} {
		if _, err := executor.Await(ctx, c.Ex, task.Create(stray, nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
		et = &errorTB{TB: t}
		realtest.CheckRoot(et, ctx, srv.Addrs(), root)
		if len(et.errs) != 1 || !strings.Contains(et.errs[0], path.Base(stray)) {
			t.Errorf("a node at %s outside the root: %q", stray, et.errs)
		}
		if _, err := executor.Await(ctx, c.Ex, task.Delete(stray, task.AnyVersion)); err != nil {
			t.Fatal(err)
		}
	}
}

// WaitEmpty returns once the directory's last child goes (deleted by
// another session, watched), and fails, naming what is left, when a child
// stays past its bound.
func TestWaitEmpty(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run := func(c *fakezk.Conn) *executor.Executor {
		ex, err := executor.New(executor.Config{Conn: c})
		if err != nil {
			t.Fatal(err)
		}
		rctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = ex.Run(rctx) }()
		t.Cleanup(func() { stop(); <-done })
		return ex
	}
	a, b := run(srv.Connect(fakezk.ConnConfig{})), run(srv.Connect(fakezk.ConnConfig{}))
	for _, p := range []string{"/d", "/d/x"} {
		if _, err := executor.Await(ctx, b, task.Create(p, nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	stays := &fatalTB{TB: t}
	ended := make(chan struct{})
	go func() { defer close(ended); realtest.WaitEmpty(stays, ctx, a, "/d", 100*time.Millisecond) }()
	<-ended
	if !strings.Contains(stays.msg, "[x]") {
		t.Fatalf("a child that stays: %q, want a failure naming it", stays.msg)
	}
	goes := &fatalTB{TB: t}
	ended = make(chan struct{})
	go func() { defer close(ended); realtest.WaitEmpty(goes, ctx, a, "/d", 20*time.Second) }()
	if _, err := executor.Await(ctx, b, task.Delete("/d/x", task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	<-ended
	if goes.msg != "" {
		t.Fatalf("the child went, yet: %s", goes.msg)
	}
}

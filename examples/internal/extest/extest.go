// Package extest holds what the examples' tests share: run an example's
// run function and insist on its verified summary, point it at a real
// server through a chroot and check it left nothing there, and check
// that bad flags are refused.
package extest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter"
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
// that point an example at it through a root node of the test's own, as
// a connect string with a chroot suffix ("127.0.0.1:port/ex-TestName",
// see Chroot): the test fails if the example leaves any node behind.
func RealServer(t testing.TB) []string {
	t.Helper()
	zkserver.Require(t)
	c := zkserver.Standalone(t, zkserver.Options{})
	return []string{"-zk", Chroot(t, c, c.ConnectString())}
}

// Chroot creates a root node for the test on c (named after the test,
// so once per test and cluster) and returns connect, the addresses an example is to dial
// (c.ConnectString(), or TLS addresses), with that root as its chroot
// suffix. When the test ends, before c stops, the test fails if anything
// is left on the server but /zookeeper and the root, or if the root has
// any descendant: an example deletes every node it created, on success
// and on failure alike. Call it on the test's goroutine, after c was
// started (its cleanup then runs before c's).
func Chroot(t testing.TB, c *zkserver.Cluster, connect string) string {
	t.Helper()
	root := "/ex-" + strings.Trim(unsafeChars.ReplaceAllString(t.Name(), "-"), "-")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := onServer(ctx, c, func(ex *executor.Executor) error {
		_, err := executor.Await(ctx, ex, task.Create(root, nil, task.Persistent))
		return err
	}); err != nil {
		t.Fatalf("creating the root %s: %v", root, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var left []string
		err := onServer(ctx, c, func(ex *executor.Executor) error {
			var err error
			left, err = leftBehind(ctx, ex, root)
			return err
		})
		switch {
		case err != nil:
			t.Errorf("looking for nodes left behind: %v", err)
		case len(left) > 0:
			t.Errorf("the example left %d nodes on the server (root %s): %s", len(left), root, strings.Join(left, " "))
		}
	})
	return connect + root
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// onServer runs f on a session of its own with c, closed when f returns.
func onServer(ctx context.Context, c *zkserver.Cluster, f func(*executor.Executor) error) error {
	conn, err := zkadapter.Dial(ctx, zkadapter.Config{Servers: c.Addrs()})
	if err != nil {
		return err
	}
	ex, err := executor.New(executor.Config{Conn: conn})
	if err != nil {
		conn.Close()
		return err
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(context.Background()) }()
	defer func() { ex.Close(); <-done }()
	return f(ex)
}

// leftBehind lists every node of the server but /zookeeper, root and the
// nodes above root: whatever an example run under root left.
func leftBehind(ctx context.Context, ex *executor.Executor, root string) ([]string, error) {
	var left []string
	var walk func(path string) error
	walk = func(path string) error {
		cl, err := executor.Await(ctx, ex, task.Children(path))
		if errors.Is(err, task.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		slices.Sort(cl.Names)
		for _, name := range cl.Names {
			child := strings.TrimSuffix(path, "/") + "/" + name
			if child == "/zookeeper" {
				continue
			}
			// root and the nodes above it are the test's; the rest is not.
			if child != root && !strings.HasPrefix(root, child+"/") {
				left = append(left, child)
			}
			if err := walk(child); err != nil {
				return err
			}
		}
		return nil
	}
	err := walk("/")
	return left, err
}

// BadConnectStrings are -zk values an example must refuse before it
// dials: a root with an empty segment, a root with a trailing slash, a
// root and no server.
var BadConnectStrings = []string{"127.0.0.1:1/bad//root", "127.0.0.1:1/app/", "/app"}

// RefusedConnectStrings checks that run refuses each of
// BadConnectStrings, given as -zk after args, with an error that names
// -zk and wraps zkadapter.ErrInvalidConfig (the connect string did not
// parse), not a failure to connect.
func RefusedConnectStrings(t testing.TB, run RunFunc, args ...string) {
	t.Helper()
	for _, s := range BadConnectStrings {
		all := append(slices.Clip(args), "-zk", s)
		var out bytes.Buffer
		err := run(context.Background(), all, &out)
		if err == nil || !errors.Is(err, zkadapter.ErrInvalidConfig) || !strings.Contains(err.Error(), "-zk") {
			t.Errorf("run %q = %v; want an error naming -zk and wrapping zkadapter.ErrInvalidConfig\n%s", all, err, out.String())
		}
	}
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

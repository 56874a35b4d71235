package realtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// MakeRoot creates a fresh chroot for a test's clients (Options.Root),
// /<name>-<random>/app, two levels deep, with a client that has no root,
// and returns its path. It fails the test (t.Fatalf) if it cannot, so it
// must be called on the test goroutine.
func MakeRoot(t testing.TB, ctx context.Context, addrs []string, name string) string {
	t.Helper()
	top := fmt.Sprintf("/%s-%016x", name, rand.Uint64())
	root := top + "/app"
	admin := Dial(t, ctx, addrs, Options{})
	defer admin.Stop()
	for _, p := range []string{top, root} {
		if _, err := executor.Await(ctx, admin.Ex, task.Create(p, nil, task.Persistent)); err != nil {
			t.Fatalf("creating the root %s: %v", p, err)
		}
	}
	return root
}

// CheckRoot fails t unless, seen by a client without a root, root has
// children (the rooted clients' requests reached it) and the path to it
// holds nothing else (none escaped it): "/" has only root's first
// component and ZooKeeper's /zookeeper, each ancestor below only the next
// component. For a test on a server of its own, once its clients are done;
// on the test goroutine.
func CheckRoot(t testing.TB, ctx context.Context, addrs []string, root string) {
	t.Helper()
	admin := Dial(t, ctx, addrs, Options{})
	defer admin.Stop()
	children := func(p string) []string {
		cl, err := executor.Await(ctx, admin.Ex, task.Children(p))
		if err != nil {
			t.Fatalf("children of %s: %v", p, err)
		}
		names := slices.Clone(cl.Names)
		slices.Sort(names)
		return names
	}
	if names := children(root); len(names) == 0 {
		t.Errorf("nothing below the root %s: the clients' requests did not reach it", root)
	}
	parts := strings.Split(root[1:], "/")
	dir := "/"
	for i, part := range parts { // each ancestor of root, and what it may hold
		want := []string{part}
		if i == 0 {
			want = []string{part, "zookeeper"}
			slices.Sort(want)
		}
		if got := children(dir); !slices.Equal(got, want) {
			t.Errorf("%s has %v outside the root %s (want %v): the clients escaped it", dir, got, root, want)
		}
		dir = task.Join(dir, part)
	}
}

// Chroot is for a test that runs once without a root and once under one:
// with under false it returns "" and does nothing; with under true it
// makes a root (MakeRoot) and returns it, and registers a cleanup that
// checks it (CheckRoot) once the test is done, before the server it
// started earlier is stopped. Give the result to every Dial as
// Options.Root. On the test goroutine.
func Chroot(t testing.TB, ctx context.Context, addrs []string, under bool) string {
	t.Helper()
	if !under {
		return ""
	}
	root := MakeRoot(t, ctx, addrs, "chroot")
	t.Cleanup(func() {
		if t.Failed() {
			return // the test's own failure says more
		}
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		CheckRoot(t, cctx, addrs, root)
	})
	return root
}

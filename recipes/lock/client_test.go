package lock_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// asyncClients is a fakezk server in Async mode and a maker of Clients on
// dir, each on an executor of its own (seeded with seed) run until the
// test ends, with run as its context.
func asyncClients(t *testing.T, dir string) (srv *fakezk.Server, run context.Context, mutex func(seed uint64) *lock.Client) {
	t.Helper()
	srv = fakezk.New(fakezk.Config{Async: true})
	run, stop := context.WithCancel(context.Background())
	var running []chan struct{}
	t.Cleanup(func() {
		stop()
		for _, d := range running {
			<-d
		}
		srv.Close()
	})
	return srv, run, func(seed uint64) *lock.Client {
		ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); _ = ex.Run(run) }()
		running = append(running, done)
		m, err := lock.NewClient(ex, dir)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
}

// Acquire(ctx) whose ctx ends while waiting returns the context's error and
// leaves no node behind; the holder is untouched.
func TestClientContextEndsWhileWaiting(t *testing.T) {
	srv, run, mutex := asyncClients(t, "/m")
	a, b := mutex(1), mutex(2)
	ha, err := a.Acquire(run)
	if err != nil {
		t.Fatal(err)
	}
	contenders := func() int {
		n := 0
		for _, p := range srv.Paths() {
			if strings.HasPrefix(p, "/m/") {
				n++
			}
		}
		return n
	}
	ctx, cancel := context.WithCancel(run)
	errc := make(chan error, 1)
	go func() {
		_, err := b.Acquire(ctx)
		errc <- err
	}()
	for contenders() != 2 {
		runtime.Gosched()
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) || !errors.Is(err, task.ErrCanceled) {
		t.Fatalf("Lock after cancel: %v", err)
	}
	for contenders() != 1 {
		runtime.Gosched()
	}
	if _, ok := srv.NodeStat(ha.Path()); !ok || !ha.IsHeld() {
		t.Fatal("holder lost its lock")
	}
	if err := a.Release(run, ha); err != nil {
		t.Fatal(err)
	}
	if contenders() != 0 {
		t.Fatal("node left after Release")
	}
	// A Held from the task API has no executor to block on.
	if err := a.Release(run, &lock.Held{}); !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("Release of a Held not acquired through a Client: %v", err)
	}
	if _, err := a.Fenced(run, nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("Fenced of a nil Held: %v", err)
	}
	if _, err := lock.NewClient(nil, "/m"); !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("NewClient(nil): %v", err)
	}
}

package rwlock_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/task"
)

// asyncClients is a fakezk server in Async mode and a maker of Clients
// on dir, each on an executor of its own (seeded with seed) run until the
// test ends, with run as its context.
func asyncClients(t *testing.T, dir string) (srv *fakezk.Server, run context.Context, mutex func(seed uint64) *rwlock.Client) {
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
	return srv, run, func(seed uint64) *rwlock.Client {
		ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); _ = ex.Run(run) }()
		running = append(running, done)
		m, err := rwlock.NewClient(ex, dir)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
}

func nodes(srv *fakezk.Server, dir string) int {
	n := 0
	for _, p := range srv.Paths() {
		if strings.HasPrefix(p, dir+"/") {
			n++
		}
	}
	return n
}

// One Client: many read locks at once, as sync.Client; no write lock
// while it holds any (no upgrade), no read lock while it holds the write
// lock (no downgrade); both refused at once with ErrAlreadyHeld, and
// allowed again once released.
func TestClientReentryRules(t *testing.T) {
	srv, run, mutex := asyncClients(t, "/m")
	m := mutex(1)
	r1, err := m.AcquireRead(run)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := m.AcquireRead(run)
	if err != nil {
		t.Fatalf("second AcquireRead on one Client: %v", err)
	}
	for name, lock := range map[string]func(context.Context) (*rwlock.Held, error){"Acquire": m.Acquire, "TryAcquire": m.TryAcquire} {
		if _, err := lock(run); !errors.Is(err, rwlock.ErrAlreadyHeld) {
			t.Fatalf("%s while reading (upgrade): %v", name, err)
		}
	}
	if err := m.Release(run, r1); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Acquire(run); !errors.Is(err, rwlock.ErrAlreadyHeld) {
		t.Fatalf("Acquire with one read lock left: %v", err)
	}
	if err := m.Release(run, r2); err != nil {
		t.Fatal(err)
	}
	wr, err := m.Acquire(run)
	if err != nil {
		t.Fatal(err)
	}
	for name, lock := range map[string]func(context.Context) (*rwlock.Held, error){
		"Acquire": m.Acquire, "TryAcquire": m.TryAcquire, "AcquireRead": m.AcquireRead, "TryAcquireRead": m.TryAcquireRead} {
		if _, err := lock(run); !errors.Is(err, rwlock.ErrAlreadyHeld) {
			t.Fatalf("%s while writing: %v", name, err)
		}
	}
	if n := nodes(srv, "/m"); n != 1 {
		t.Fatalf("%d nodes, want the writer's only", n)
	}
	if err := m.Release(run, wr); err != nil {
		t.Fatal(err)
	}
	r3, err := m.TryAcquireRead(run)
	if err != nil {
		t.Fatalf("TryAcquireRead after the writer's unlock: %v", err)
	}
	if err := m.Release(run, r3); err != nil {
		t.Fatal(err)
	}
}

// A lock that ended by loss (not Release) no longer counts as held.
func TestClientAfterLoss(t *testing.T) {
	srv, run, mutex := asyncClients(t, "/m")
	m := mutex(1)
	h, err := m.Acquire(run)
	if err != nil {
		t.Fatal(err)
	}
	_ = h.Err() // sets the node watch
	if err := srv.AdminDelete(h.Path()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("loss not signalled")
	}
	h2, err := m.AcquireRead(run)
	if err != nil {
		t.Fatalf("AcquireRead after the write lock was lost: %v", err)
	}
	if err := m.Release(run, h2); err != nil {
		t.Fatal(err)
	}
}

// AcquireRead whose ctx ends while waiting behind a writer returns the
// context's error and leaves no node behind; TryAcquireRead fails with ErrBusy.
func TestClientContextEndsWhileWaiting(t *testing.T) {
	srv, run, mutex := asyncClients(t, "/m")
	a, b := mutex(1), mutex(2)
	ha, err := a.Acquire(run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryAcquireRead(run); !errors.Is(err, rwlock.ErrBusy) {
		t.Fatalf("TryAcquireRead behind a writer: %v", err)
	}
	ctx, cancel := context.WithCancel(run)
	errc := make(chan error, 1)
	go func() {
		_, err := b.AcquireRead(ctx)
		errc <- err
	}()
	for nodes(srv, "/m") != 2 {
		runtime.Gosched()
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) || !errors.Is(err, task.ErrCanceled) {
		t.Fatalf("AcquireRead after cancel: %v", err)
	}
	for nodes(srv, "/m") != 1 {
		runtime.Gosched()
	}
	if !ha.IsHeld() {
		t.Fatal("the holder lost its lock")
	}
	if err := a.Release(run, ha); err != nil {
		t.Fatal(err)
	}
}

// Release of a Held taken by the task API (no Client) is refused.
func TestReleaseWithoutClient(t *testing.T) {
	w, _ := newWorld(t, 1)
	h, err := mustRun(t, w, 0, mustLock(t, "/rw").Acquire())
	if err != nil {
		t.Fatal(err)
	}
	m, err := rwlock.NewClient(w.Execs[0], "/rw")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Release(context.Background(), h); !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("Release: %v", err)
	}
	if _, err := m.Fenced(context.Background(), h); !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("Fenced: %v", err)
	}
}

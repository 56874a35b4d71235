package blocking_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// heard collects what an executor reports to Config.OnError.
type heard struct {
	mu   sync.Mutex
	errs []error
	ch   chan error
}

func (h *heard) onError(err error) {
	h.mu.Lock()
	h.errs = append(h.errs, err)
	h.mu.Unlock()
	if h.ch != nil {
		h.ch <- err
	}
}

func (h *heard) all() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]error(nil), h.errs...)
}

// steppedHearing is stepped with OnError collected.
func steppedHearing(t *testing.T) (*executor.Executor, *heard) {
	t.Helper()
	h := &heard{}
	ex, err := executor.New(executor.Config{OnError: h.onError})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Shutdown(); ex.RunUntilIdle() })
	return ex, h
}

// A give-back that fails after its caller stopped waiting is reported to
// the executor's Config.OnError, once; one whose failure the caller
// received is not reported as well, nor one that succeeds.
func TestGiveFailureReported(t *testing.T) {
	boom := errors.New("boom")
	ended, cancel := context.WithCancel(context.Background())
	cancel()

	t.Run("ended context", func(t *testing.T) {
		ex, h := steppedHearing(t)
		if _, err := blocking.Give(ended, "test op", ex, nil, task.Fail[int](boom)); !errors.Is(err, task.ErrCanceled) {
			t.Fatalf("Give with an ended context = %v", err)
		}
		if _, err := blocking.Give(ended, "test op", ex, nil, task.Value(1)); !errors.Is(err, task.ErrCanceled) {
			t.Fatalf("Give with an ended context = %v", err)
		}
		ex.RunUntilIdle()
		if errs := h.all(); len(errs) != 1 || !errors.Is(errs[0], boom) {
			t.Fatalf("OnError heard %v, want %v once", errs, boom)
		}
	})

	t.Run("context ends meanwhile", func(t *testing.T) {
		h := &heard{ch: make(chan error, 1)}
		ex, err := executor.New(executor.Config{OnError: h.onError})
		if err != nil {
			t.Fatal(err)
		}
		run, stop := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { defer close(ran); _ = ex.Run(run) }()
		defer func() { stop(); <-ran }()
		ctx, cancel := context.WithCancel(context.Background())
		release := make(chan struct{})
		slow := task.Task[int](func(s *task.Scope, k task.Cont[int]) {
			cancel() // the caller stops waiting while the give-back runs
			go func() {
				<-release
				executor.Submit(ex, task.Func(func(*task.Scope) (int, error) { k(0, boom); return 0, nil }), nil)
			}()
		})
		if _, err := blocking.Give(ctx, "test op", ex, nil, slow); !errors.Is(err, task.ErrCanceled) {
			t.Fatalf("Give whose context ends = %v", err)
		}
		close(release)
		wait, cancelWait := context.WithTimeout(context.Background(), bound)
		defer cancelWait()
		select {
		case err := <-h.ch:
			if !errors.Is(err, boom) {
				t.Fatalf("OnError heard %v, want %v", err, boom)
			}
		case <-wait.Done():
			t.Fatal("the give-back's failure, after its caller left, was reported nowhere")
		}
	})

	t.Run("on an executor", func(t *testing.T) {
		ex, h := steppedHearing(t)
		executor.Submit(ex, task.Func(func(*task.Scope) (int, error) {
			return blocking.Give(context.Background(), "test op", ex, nil, task.Fail[int](boom))
		}), func(_ int, err error) {
			if !errors.Is(err, executor.ErrOnExecutor) {
				t.Errorf("Give in a job = %v", err)
			}
		})
		ex.RunUntilIdle()
		if errs := h.all(); len(errs) != 1 || !errors.Is(errs[0], boom) {
			t.Fatalf("OnError heard %v, want %v once", errs, boom)
		}
	})

	t.Run("caller waits", func(t *testing.T) {
		h := &heard{}
		ex, err := executor.New(executor.Config{OnError: h.onError})
		if err != nil {
			t.Fatal(err)
		}
		run, stop := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { defer close(ran); _ = ex.Run(run) }()
		if _, err := blocking.Give(context.Background(), "test op", ex, nil, task.Fail[int](boom)); !errors.Is(err, boom) {
			t.Fatalf("Give = %v", err)
		}
		stop()
		<-ran
		if errs := h.all(); len(errs) != 0 {
			t.Fatalf("OnError heard %v of a failure the caller received", errs)
		}
	})
}

// A lock released with an ended context whose delete then fails for good
// (the directory's ACL no longer lets this client delete: NoAuth) is not
// lost: the failure reaches the executor's Config.OnError, naming the
// node.
func TestReleaseFailureAfterCallerLeftReported(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	h := &heard{ch: make(chan error, 4)}
	run, stop := context.WithCancel(context.Background())
	var running []chan struct{}
	defer func() {
		stop()
		for _, d := range running {
			<-d
		}
	}()
	start := func(cfg executor.Config) *executor.Executor {
		cfg.Conn, cfg.Clock = srv.Connect(fakezk.ConnConfig{}), srv.Clock()
		ex, err := executor.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); _ = ex.Run(run) }()
		running = append(running, done)
		return ex
	}
	user := start(executor.Config{Seed: 1, OnError: h.onError})
	admin := start(executor.Config{Seed: 2})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()

	m := must(lock.NewClient(user, "/noauth"))
	held, err := m.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	noDelete := []task.ACL{{Perms: task.PermAll &^ task.PermDelete, Scheme: "world", ID: "anyone"}}
	if _, err := executor.Await(ctx, admin, task.SetACL("/noauth", noDelete, -1)); err != nil {
		t.Fatal(err)
	}
	if err := m.Release(endedCtx(), held); !errors.Is(err, task.ErrCanceled) {
		t.Fatalf("Release with an ended context = %v", err)
	}
	select {
	case err := <-h.ch:
		if !errors.Is(err, task.ErrNoAuth) {
			t.Fatalf("OnError heard %v, want ErrNoAuth", err)
		}
		if p := held.Path(); !strings.Contains(err.Error(), p) {
			t.Fatalf("OnError heard %v, which does not name %s", err, p)
		}
	case <-ctx.Done():
		t.Fatal("the release's NoAuth, after its caller left, was reported nowhere")
	}
	if _, ok := srv.NodeStat(held.Path()); !ok {
		t.Fatal("the node went although its delete was refused")
	}
}

// endsOnSecondLook is a context that has not ended the first time it is
// asked and ends just after: the schedule where the caller's ctx ends
// while Give submits (t itself may end it, on the executor, before the
// caller looks again).
type endsOnSecondLook struct {
	context.Context
	mu    sync.Mutex
	asked int
	done  chan struct{}
}

func (c *endsOnSecondLook) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.asked++; c.asked == 1 {
		close(c.done) // ends just after this look
		return nil
	}
	return context.Canceled
}

func (c *endsOnSecondLook) Done() <-chan struct{} { return c.done }

// A ctx that ends between Give's look before the submit and its look
// after: the give-back's later failure is reported to OnError, not left
// in a channel no one reads.
func TestGiveFailureReportedWhenCtxEndsDuringSubmit(t *testing.T) {
	boom := errors.New("boom")
	h := &heard{ch: make(chan error, 1)}
	ex, err := executor.New(executor.Config{OnError: h.onError})
	if err != nil {
		t.Fatal(err)
	}
	run, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = ex.Run(run) }()
	defer func() { stop(); <-ran }()
	release := make(chan struct{})
	slow := task.Task[int](func(s *task.Scope, k task.Cont[int]) {
		go func() {
			<-release
			executor.Submit(ex, task.Func(func(*task.Scope) (int, error) { k(0, boom); return 0, nil }), nil)
		}()
	})
	ctx := &endsOnSecondLook{Context: context.Background(), done: make(chan struct{})}
	if _, err := blocking.Give(ctx, "test op", ex, nil, slow); !errors.Is(err, task.ErrCanceled) {
		t.Fatalf("Give whose context ends = %v", err)
	}
	close(release)
	wait, cancelWait := context.WithTimeout(context.Background(), bound)
	defer cancelWait()
	select {
	case err := <-h.ch:
		if !errors.Is(err, boom) {
			t.Fatalf("OnError heard %v, want %v", err, boom)
		}
	case <-wait.Done():
		t.Fatal("the give-back's failure, after its caller left, was reported nowhere")
	}
}

package rwlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/task"
)

// firstDeleteHolder is a Conn that keeps back (never sends) the first
// delete of a node under dir.
type firstDeleteHolder struct {
	*fakezk.Conn
	dir  string
	once sync.Once
	held chan struct{} // closed once the delete is kept back
}

func (c *firstDeleteHolder) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if r, ok := req.(*task.DeleteRequest); ok && strings.HasPrefix(r.Path, c.dir+"/") {
		holding := false
		c.once.Do(func() {
			holding = true
			close(c.held)
		})
		if holding {
			return
		}
	}
	c.Conn.Do(req, done, watch)
}

// Every blocking call after the executor stopped fails with
// task.ErrClosed, at once, also while a Release that went on in the
// background (its ctx had ended) never heard back: the next acquire
// "waits for that" delete, and the delete ended with the executor
// (the node goes with the session). A Release with an ended ctx still
// returns its ctx's error.
func TestCallsAfterTheExecutorStopped(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	const dir = "/review/stopped/rw"
	conn := &firstDeleteHolder{Conn: srv.Connect(fakezk.ConnConfig{}), dir: dir, held: make(chan struct{})}
	ex, err := executor.New(executor.Config{Conn: conn, Clock: srv.Clock(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	run, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = ex.Run(run) }()
	defer func() { stop(); <-ran }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, _ := rwlock.NewClient(ex, dir)
	w, err := cl.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ended, end := context.WithCancel(ctx)
	end()
	if err := cl.Release(ended, w); !errors.Is(err, task.ErrCanceled) {
		t.Fatalf("Release with an ended ctx = %v", err)
	}
	select {
	case <-conn.held:
	case <-ctx.Done():
		t.Fatal("the delete was never sent")
	}
	// The next acquire waits for that delete, here until its ctx ends.
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	r, err := cl.AcquireRead(short)
	cancelShort()
	if err == nil {
		t.Fatalf("AcquireRead went ahead of the Release's delete kept back: %v", r.Path())
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, task.ErrDeadlineExceeded) {
		t.Fatalf("AcquireRead whose ctx ended while it waited for the Release's delete = %v, want its deadline", err)
	}
	stop()
	<-ran
	calls := []struct {
		name string
		f    func() error
	}{
		{"Acquire", func() error { _, err := cl.Acquire(ctx); return err }},
		{"AcquireRead", func() error { _, err := cl.AcquireRead(ctx); return err }},
		{"TryAcquire", func() error { _, err := cl.TryAcquire(ctx); return err }},
		{"TryAcquireRead", func() error { _, err := cl.TryAcquireRead(ctx); return err }},
		{"Release", func() error { return cl.Release(ctx, w) }},
		{"Fenced", func() error { _, err := cl.Fenced(ctx, w, task.SetOp("/x", nil, task.AnyVersion)); return err }},
	}
	for _, c := range calls {
		start := time.Now()
		if err := c.f(); !errors.Is(err, task.ErrClosed) {
			t.Errorf("%s after the executor stopped = %v, want task.ErrClosed", c.name, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s after the executor stopped took %v", c.name, d)
		}
	}
	if err := cl.Release(ended, w); !errors.Is(err, task.ErrCanceled) && !errors.Is(err, task.ErrClosed) {
		t.Errorf("Release with an ended ctx after the executor stopped = %v", err)
	}
}

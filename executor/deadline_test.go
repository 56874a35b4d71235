package executor_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

// wantDeadline fails unless err matches task.ErrDeadlineExceeded and
// context.DeadlineExceeded and its message is want.
func wantDeadline(t *testing.T, err error, want string) {
	t.Helper()
	if !errors.Is(err, task.ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want one matching task.ErrDeadlineExceeded and context.DeadlineExceeded", err)
	}
	if err.Error() != want {
		t.Fatalf("err = %q, want %q", err, want)
	}
}

// A flow's deadline that passes while a request waits for its reply names
// the request: an *OpError with its operation and path.
func TestDeadlineNamesTheRequestInFlight(t *testing.T) {
	r := rig.New(t)
	o := &rig.Outcome[task.Data]{}
	executor.SubmitWith(r.Ex, task.Get("/app/config"), executor.Options{Deadline: r.Clock.Now().Add(time.Second)}, o.K)
	r.Idle()
	r.Advance(time.Second)
	o.Want(t, 1, task.ErrDeadlineExceeded)
	wantDeadline(t, o.Err, "zk get /app/config: deadline exceeded")
	var oe *task.OpError
	if !errors.As(o.Err, &oe) || oe.Op != "get" || oe.Path != "/app/config" {
		t.Fatalf("err = %#v, want an *OpError for get /app/config", o.Err)
	}
}

// A flow whose deadline passes before it starts says so.
func TestDeadlineNamesTheQueue(t *testing.T) {
	r := rig.New(t)
	r.Conn.Suspend()
	r.Idle()
	o := &rig.Outcome[task.Data]{}
	executor.SubmitWith(r.Ex, task.Get("/a"), executor.Options{Deadline: r.Clock.Now().Add(time.Second)}, o.K)
	r.Idle()
	r.Advance(time.Second)
	o.Want(t, 1, task.ErrDeadlineExceeded)
	wantDeadline(t, o.Err, "deadline exceeded before the flow started (it waited in the executor's queue)")
}

// deadlineCtx is a context whose deadline the test ends by hand.
// asked is closed when Done is first called: Await calls it only once the
// flow is submitted.
type deadlineCtx struct {
	context.Context
	once, askOnce sync.Once
	done, asked   chan struct{}
}

func newDeadlineCtx() *deadlineCtx {
	return &deadlineCtx{Context: context.Background(), done: make(chan struct{}), asked: make(chan struct{})}
}

func (c *deadlineCtx) Done() <-chan struct{} {
	c.askOnce.Do(func() { close(c.asked) })
	return c.done
}
func (c *deadlineCtx) expire() { c.once.Do(func() { close(c.done) }) }
func (c *deadlineCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// Await, when its context's deadline passes, says whether the flow had
// been submitted, had started or waited in the queue.
func TestAwaitDeadlineSaysWhere(t *testing.T) {
	r := rig.New(t)
	await := func(ctx context.Context) chan error {
		errc := make(chan error, 1)
		go func() {
			_, err := executor.Await(ctx, r.Ex, task.Get("/a"))
			errc <- err
		}()
		return errc
	}

	ctx := newDeadlineCtx()
	ctx.expire()
	wantDeadline(t, <-await(ctx), "executor.Await: deadline exceeded: the context's deadline had passed before the flow was submitted")

	ctx = newDeadlineCtx()
	errc := await(ctx)
	for len(r.Conn.Calls()) == 0 { // until the flow has started and sent
		r.Idle()
		runtime.Gosched()
	}
	ctx.expire()
	wantDeadline(t, <-errc, "executor.Await: deadline exceeded: the context's deadline passed while the flow ran")
	r.Idle()

	r.Conn.Suspend()
	r.Idle()
	ctx = newDeadlineCtx()
	errc = await(ctx)
	<-ctx.asked
	ctx.expire()
	wantDeadline(t, <-errc, "executor.Await: deadline exceeded: the context's deadline passed before the flow started (it waited in the executor's queue)")
}

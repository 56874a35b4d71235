package masterworker_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// A worker whose Serve ends with its context gives its registration up
// at once (not when its session ends), so the primary can move its tasks
// back.
func TestWorkerServeDeregistersWhenContextEnds(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	run, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = ex.Run(run) }()
	defer func() { stop(); <-ran }()

	sys := newSys(t, "/mw")
	w, err := sys.Worker("w1", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
	if err != nil {
		t.Fatal(err)
	}
	// A failure bound in real time, not an ordering.
	bound, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx, end := context.WithCancel(bound)
	served := make(chan error, 1)
	go func() { served <- w.Serve(ctx, ex) }()
	reg := sys.WorkersPath() + "/w1"
	for !w.Registered() {
		if bound.Err() != nil {
			t.Fatal("the worker never registered")
		}
		runtime.Gosched()
	}
	end()
	if err := <-served; !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve = %v, want the context's error", err)
	}
	for {
		if _, ok := srv.NodeStat(reg); !ok {
			break
		}
		if bound.Err() != nil {
			t.Fatalf("%s left registered after Serve ended", reg)
		}
		runtime.Gosched()
	}
}

// A master whose Serve ends with its context gives its mastership up at
// once (not when its session ends): the backup becomes primary while the
// old primary's session lives on.
func TestMasterServeResignsWhenContextEnds(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	run, stop := context.WithCancel(context.Background())
	var exs []*executor.Executor
	var ran []chan struct{}
	for i := range 2 {
		ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: uint64(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); _ = ex.Run(run) }()
		exs, ran = append(exs, ex), append(ran, done)
	}
	defer func() {
		stop()
		for _, d := range ran {
			<-d
		}
	}()
	sys := newSys(t, "/mw")
	m1, err := sys.Master("m1")
	if err != nil {
		t.Fatal(err)
	}
	m2, err := sys.Master("m2")
	if err != nil {
		t.Fatal(err)
	}
	// A failure bound in real time, not an ordering.
	bound, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx1, end1 := context.WithCancel(bound)
	served1 := make(chan error, 1)
	go func() { served1 <- m1.Serve(ctx1, exs[0]) }()
	for !m1.Primary() {
		if bound.Err() != nil {
			t.Fatal("m1 never became primary")
		}
		runtime.Gosched()
	}
	ctx2, end2 := context.WithCancel(bound)
	served2 := make(chan error, 1)
	go func() { served2 <- m2.Serve(ctx2, exs[1]) }()
	defer func() { end2(); <-served2 }()
	end1()
	if err := <-served1; !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve = %v, want the context's error", err)
	}
	for !m2.Primary() {
		if bound.Err() != nil {
			t.Fatalf("the backup never became primary after the primary's Serve ended (m1 primary: %v)", m1.Primary())
		}
		runtime.Gosched()
	}
}

// A worker whose Serve ends for another reason than its context (here a
// handler that fails with task.ErrCanceled, which stops the worker) no
// longer serves, so it must not stay registered to be assigned tasks while
// its session lives on: Serve returns with the registration deleted, and
// the task it did not run is left for the primary to move back.
func TestWorkerServeDeregistersWhenRunFails(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	run, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = ex.Run(run) }()
	defer func() { stop(); <-ran }()

	// A failure bound in real time, not an ordering.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sys := newSys(t, "/mw")
	job := sys.AssignPath("w1") + "/task-1"
	for _, tk := range []task.Task[task.Unit]{
		sys.Setup(),
		c.Map(task.Create(sys.AssignPath("w1"), nil, task.Persistent), func(string) task.Unit { return task.Unit{} }),
		c.Map(task.Create(job, []byte("x"), task.Persistent), func(string) task.Unit { return task.Unit{} }),
	} {
		if _, err := executor.Await(ctx, ex, tk); err != nil {
			t.Fatal(err)
		}
	}
	handled := 0
	w, err := sys.Worker("w1", func(masterworker.Job) task.Task[[]byte] {
		handled++
		return task.Fail[[]byte](task.ErrCanceled)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Serve(ctx, ex); !errors.Is(err, task.ErrCanceled) || ctx.Err() != nil {
		t.Fatalf("Serve = %v (ctx: %v), want the handler's task.ErrCanceled", err, ctx.Err())
	}
	// A read after Serve's end: anything the worker's flows still did on
	// the session (a registration made again) is in by its reply.
	if _, err := executor.Await(ctx, ex, task.Sync("/")); err != nil {
		t.Fatal(err)
	}
	if handled != 1 {
		t.Errorf("handler ran %d times, want 1", handled)
	}
	reg := sys.WorkersPath() + "/w1"
	if st, ok := srv.NodeStat(reg); ok {
		t.Errorf("%s (owner %#x) left registered after Serve ended with the handler's error, its session alive", reg, st.EphemeralOwner)
	}
	if w.Registered() {
		t.Error("Registered() after Serve ended")
	}
	if _, ok := srv.NodeStat(job); !ok {
		t.Errorf("%s gone: the task the handler did not finish must be left for the primary", job)
	}
}

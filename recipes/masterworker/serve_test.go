package masterworker_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

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

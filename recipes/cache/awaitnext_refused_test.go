package cache_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/cache"
	"github.com/zkflow/zkflow/task"
)

// AwaitNext before Start fails at once with task.ErrInvalidArgument, as
// Next does, instead of waiting for a difference nothing will serve until
// ctx ends.
func TestAwaitNextBeforeStartFailsAtOnce(t *testing.T) {
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

	cc, err := cache.NewChildren("/notstarted")
	if err != nil {
		t.Fatal(err)
	}
	// The task face refuses at once.
	if _, err := executor.Await(run, ex, cc.Next()); !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("Next before Start = %v, want task.ErrInvalidArgument", err)
	}
	// The blocking face: a deadline of 2s (a failure bound).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = cc.AwaitNext(ctx, ex)
	if !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("AwaitNext before Start = %v, want task.ErrInvalidArgument at once (as Next)", err)
	}
}

// AwaitNext with another executor than the cache's is refused with
// task.ErrInvalidArgument: its waiter would be resumed from the cache's
// executor goroutine while the other runs its own steps (the race
// detector saw it), and the engine's state is the cache's executor's.
func TestAwaitNextOnAnotherExecutorIsRefused(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	run, stop := context.WithCancel(context.Background())
	var exs []*executor.Executor
	var dones []chan struct{}
	for i := range 2 {
		ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: uint64(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		d := make(chan struct{})
		go func() { defer close(d); _ = ex.Run(run) }()
		exs, dones = append(exs, ex), append(dones, d)
	}
	defer func() {
		stop()
		for _, d := range dones {
			<-d
		}
	}()
	if _, err := executor.Await(run, exs[0], task.Create("/other", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	cc, err := cache.NewChildren("/other")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := executor.Await(run, exs[0], cc.Start()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(run, 3*time.Second)
	defer cancel()
	const n = 200
	got := make(chan error, 1)
	go func() {
		for {
			ch, err := cc.AwaitNext(ctx, exs[1])
			if err != nil || len(ch.Nodes) == n {
				got <- err
				return
			}
		}
	}()
	for i := range n {
		if _, err := executor.Await(ctx, exs[0], task.Create(fmt.Sprintf("/other/c%03d", i), nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	err = <-got
	t.Logf("AwaitNext on another executor than the cache's: %v", err)
	if !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("AwaitNext with an executor that is not the cache's = %v, want a refusal (task.ErrInvalidArgument)", err)
	}
}

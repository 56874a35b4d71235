package partition_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// clients returns n Clients of one set, each on its own session of one
// fake server on the real clock, their executors run until the test ends.
func clients(t *testing.T, n int, path string, items []string, opts ...partition.Option) ([]*partition.Client, []*executor.Executor) {
	t.Helper()
	srv := fakezk.New(fakezk.Config{Async: true, Clock: task.RealClock()})
	ctx, stop := context.WithCancel(context.Background())
	var running sync.WaitGroup
	t.Cleanup(func() { stop(); running.Wait(); srv.Close() })
	cs := make([]*partition.Client, n)
	exs := make([]*executor.Executor, n)
	for i := range cs {
		ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{})})
		if err != nil {
			t.Fatal(err)
		}
		running.Add(1)
		go func() { defer running.Done(); _ = ex.Run(ctx) }()
		if cs[i], err = partition.NewClient(ex, path, items, opts...); err != nil {
			t.Fatal(err)
		}
		exs[i] = ex
	}
	return cs, exs
}

// The blocking face: Wait ends with its ctx (a typed error, the member
// unharmed); Leave is started with a ctx that has ended, and its items
// go to the other member all the same; Wait on a member that left returns
// ErrLeft; nil values give typed errors.
func TestClient(t *testing.T) {
	cs, exs := clients(t, 2, "/c", []string{"x", "y", "z"}, partition.WithStable(20*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m0, err := cs[0].Join(ctx, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	ended, end := context.WithCancel(ctx)
	end()
	if _, err := cs[0].Wait(ended, m0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with an ended ctx = %v, want canceled", err)
	}
	held, err := cs[0].Wait(ctx, m0)
	if err != nil || len(held) != 3 {
		t.Fatalf("Wait = %v, %v; want all 3 items", held, err)
	}
	m1, err := cs[1].Join(ctx, "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Leave with a ctx that has ended: it returns that error, and the
	// leave goes on.
	if err := cs[0].Leave(ended, m0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Leave with an ended ctx = %v", err)
	}
	for {
		held, err := cs[1].Wait(ctx, m1)
		if err != nil {
			t.Fatal(err)
		}
		if len(held) == 3 {
			break
		}
		// Acquired on a party that still listed a: wait for the next change.
		if _, err := executor.Await(ctx, exs[1], task.Sync("/")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs[0].Wait(ctx, m0); !errors.Is(err, partition.ErrLeft) {
		t.Fatalf("Wait after Leave = %v, want ErrLeft", err)
	}
	if _, err := cs[0].Fenced(ctx, m0, "x"); !errors.Is(err, partition.ErrNotHeld) {
		t.Fatalf("Fenced after Leave = %v, want ErrNotHeld", err)
	}
	var nc *partition.Client
	if _, err := nc.Join(ctx, "a", nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("nil Client Join = %v", err)
	}
	if _, err := cs[0].Wait(ctx, nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Wait(nil) = %v", err)
	}
	if err := cs[0].Leave(ctx, nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Leave(nil) = %v", err)
	}
	if _, err := partition.NewClient(nil, "/c", nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("NewClient(nil) = %v", err)
	}
}

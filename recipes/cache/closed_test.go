package cache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// The executor closed ends every kind of cache with task.ErrClosed (Err,
// Done), and a Next after it fails with that error, as the package doc
// says.
func TestExecutorClosedEndsCache(t *testing.T) {
	clients := map[string]func(*executor.Executor, string, ...Option) (*Client, error){
		"node": NewNodeClient, "children": NewChildrenClient, "tree": NewTreeClient,
	}
	for name, newClient := range clients {
		t.Run(name, func(t *testing.T) {
			srv := fakezk.New(fakezk.Config{Async: true})
			defer srv.Close()
			ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
			defer stop()
			ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			ran := make(chan struct{})
			go func() { defer close(ran); _ = ex.Run(ctx) }()
			defer func() { stop(); <-ran }()
			if _, err := executor.Await(ctx, ex, task.Create("/closed", []byte("v"), task.Persistent)); err != nil {
				t.Fatal(err)
			}
			cc, err := newClient(ex, "/closed", WithData())
			if err != nil {
				t.Fatal(err)
			}
			if err := cc.Start(ctx); err != nil {
				t.Fatal(err)
			}
			ex.Close()
			select {
			case <-cc.Done():
			case <-ctx.Done():
				t.Fatal("the cache did not end when its executor closed")
			}
			if err := cc.Err(); !errors.Is(err, task.ErrClosed) {
				t.Fatalf("Err after the executor closed: %v, want task.ErrClosed", err)
			}
			if _, err := cc.Next(ctx); !errors.Is(err, task.ErrClosed) {
				t.Fatalf("Next after the executor closed: %v, want task.ErrClosed", err)
			}
		})
	}
}

package discovery_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/task"
)

// The blocking face on a running executor: Names and Query see what
// Register made; a provider over a started cache is used from several
// goroutines at once (run under -race); a call whose ctx has ended
// returns task.ErrCanceled, and Unregister still deletes the node.
func TestClient(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ctx, stop := context.WithCancel(context.Background())
	var running sync.WaitGroup
	defer func() { stop(); running.Wait() }()
	ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
	running.Add(1)
	go func() { defer running.Done(); _ = ex.Run(ctx) }()
	c, _ := discovery.NewClient(ex, "/services")

	var regs []*discovery.Registration
	for _, id := range []string{"a", "b", "c"} {
		r, err := c.Register(ctx, discovery.Instance{Name: "web", ID: id})
		if err != nil {
			t.Fatal(err)
		}
		regs = append(regs, r)
	}
	if names, err := c.Names(ctx); err != nil || !slices.Equal(names, []string{"web"}) {
		t.Fatalf("Names = %v, %v", names, err)
	}
	if ins, err := c.Query(ctx, "web"); err != nil || !slices.Equal(ids(ins), []string{"a", "b", "c"}) {
		t.Fatalf("Query = %v, %v", ids(ins), err)
	}
	sc, err := c.StartCache(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Stop(ctx)
	if got := ids(sc.Instances()); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("cache at start = %v", got)
	}
	p, _ := sc.Provider(discovery.WithStrategy(discovery.Sticky))
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				in, err := p.Get()
				if err != nil {
					errs[g] = err
					return
				}
				if in.ID == "a" {
					p.NoteError(in)
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if in, _ := p.Get(); in.ID == "a" {
		t.Fatal("a was reported failing hundreds of times and is still served")
	}

	ended, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Query(ended, "web"); !errors.Is(err, task.ErrCanceled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Query with an ended ctx = %v", err)
	}
	if err := c.Unregister(ended, regs[0]); !errors.Is(err, context.Canceled) {
		t.Fatalf("Unregister with an ended ctx = %v", err)
	}
	for got := ids(sc.Instances()); !slices.Equal(got, []string{"b", "c"}); got = ids(sc.Instances()) {
		if _, err := sc.Next(ctx); err != nil {
			t.Fatalf("waiting for a to go (cache has %v): %v", got, err)
		}
	}
	for _, r := range regs[1:] {
		if err := c.Unregister(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
}

// ServiceCache.Next waits across an expiry of the cache's session (the
// cache follows the new session): a Next under way when the session
// expires returns the next change, not task.ErrSessionExpired.
func TestServiceCacheNextAcrossExpiry(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ctx, stop := context.WithCancel(context.Background())
	var running sync.WaitGroup
	defer func() { stop(); running.Wait() }()
	conn := srv.Connect(fakezk.ConnConfig{})
	ex, _ := executor.New(executor.Config{Conn: conn, Clock: srv.Clock(), Seed: 1})
	running.Add(1)
	go func() { defer running.Done(); _ = ex.Run(ctx) }()
	other, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 2})
	running.Add(1)
	go func() { defer running.Done(); _ = other.Run(ctx) }()
	c, _ := discovery.NewClient(ex, "/services")
	reg, _ := discovery.NewClient(other, "/services")
	if _, err := reg.Register(ctx, discovery.Instance{Name: "web", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	sc, err := c.StartCache(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Stop(ctx)
	if ins, err := sc.Next(ctx); err != nil || !slices.Equal(ids(ins), []string{"a"}) {
		t.Fatalf("first Next = %v, %v", ids(ins), err)
	}
	type result struct {
		ins []discovery.Instance
		err error
	}
	out := make(chan result, 1)
	go func() { ins, err := sc.Next(ctx); out <- result{ins, err} }()
	srv.Expire(conn)
	if _, err := reg.Register(ctx, discovery.Instance{Name: "web", ID: "b"}); err != nil {
		t.Fatal(err)
	}
	r := <-out
	if r.err != nil {
		t.Fatalf("Next across an expiry = %v, want the next change", r.err)
	}
}

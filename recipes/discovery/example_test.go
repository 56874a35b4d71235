package discovery_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/discovery"
)

// The blocking API: two instances register on sessions of their own; a
// client follows the service with a cache and a round-robin provider.
func ExampleClient() {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ctx, stop := context.WithCancel(context.Background())
	var running sync.WaitGroup
	defer func() { stop(); running.Wait() }()
	client := func(seed uint64) *discovery.Client {
		ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: seed})
		running.Add(1)
		go func() { defer running.Done(); _ = ex.Run(ctx) }()
		c, _ := discovery.NewClient(ex, "/services")
		return c
	}
	a, b, finder := client(1), client(2), client(3)

	ra, _ := a.Register(ctx, discovery.Instance{Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80})
	b.Register(ctx, discovery.Instance{Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80})
	cache, _ := finder.StartCache(ctx, "web")
	defer cache.Stop(ctx)
	p, _ := cache.Provider()
	for range 3 {
		in, _ := p.Get()
		fmt.Println("call", in.ID, in.Address)
	}
	fmt.Println("unregister:", a.Unregister(ctx, ra))
	for len(cache.Instances()) != 1 {
		cache.Next(ctx)
	}
	in, _ := p.Get()
	fmt.Println("left:", in.ID)
	// Output:
	// call web-1 10.0.0.1
	// call web-2 10.0.0.2
	// call web-1 10.0.0.1
	// unregister: <nil>
	// left: web-2
}

// A typed payload and the down-instance policy, on a fake clock.
func ExampleProvider() {
	clock := fakezk.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	type meta struct{ Zone string }
	var ins []discovery.Instance
	for i, zone := range []string{"eu", "us"} {
		in, _ := discovery.WithPayload(discovery.Instance{Name: "web", ID: fmt.Sprintf("web-%d", i+1)}, meta{zone})
		ins = append(ins, in)
	}
	p, _ := discovery.NewProvider(func() []discovery.Instance { return ins }, clock,
		discovery.WithStrategy(discovery.Sticky), discovery.WithDownThreshold(1), discovery.WithDownTimeout(time.Minute))
	in, _ := p.Get()
	m, _ := discovery.Payload[meta](in)
	fmt.Println(in.ID, m.Zone)
	p.NoteError(in) // web-1 is down for a minute
	in, _ = p.Get()
	fmt.Println(in.ID)
	clock.Advance(time.Minute)
	in, _ = p.Get()
	fmt.Println(in.ID, "(sticky)")
	// Output:
	// web-1 eu
	// web-2
	// web-2 (sticky)
}

package main

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/peers"
	"github.com/zkflow/zkflow/recipes/discovery"
)

// discoveryInstances is how many instances the discovery scenario
// registers (the Curator peer's DiscoveryPeer.INSTANCES).
const discoveryInstances = 8

// The discovery scenario: service lookups through a provider over a
// cache, against Curator's ServiceProvider over its ServiceCache
// (DiscoveryPeer.java). In the group "recipes".
func init() {
	register(&scenario{
		Name: "discovery", Title: fmt.Sprintf("service lookups, round-robin provider over a cache of %d instances (recipes/discovery)", discoveryInstances),
		Unit: "lookups/s", Clients: []int{1, 4, 16}, Peers: []peers.Kind{peers.Curator}, Run: discoveryRun, Group: "recipes",
	})
}

// discoveryRun: the first client registers the instances; every client
// starts a cache of the service and waits until it holds them all; an
// operation is one Provider.Get over the client's cache.
func discoveryRun(ctx context.Context, r runSpec) (measured, error) {
	var first atomic.Bool
	return perClient(ctx, r, func(ex *executor.Executor) (func(context.Context) error, error) {
		c, err := discovery.NewClient(ex, r.Path)
		if err != nil {
			return nil, err
		}
		if first.CompareAndSwap(false, true) {
			for k := range discoveryInstances {
				in := discovery.Instance{Name: "bench", ID: fmt.Sprintf("i%d", k), Address: fmt.Sprintf("10.0.0.%d", k), Port: 8080}
				if _, err := c.Register(ctx, in); err != nil {
					return nil, err
				}
			}
		}
		sc, err := c.StartCache(ctx, "bench")
		if err != nil {
			return nil, err
		}
		for len(sc.Instances()) < discoveryInstances {
			if _, err := sc.Next(ctx); err != nil {
				return nil, err
			}
		}
		p, err := sc.Provider()
		if err != nil {
			return nil, err
		}
		return func(context.Context) error {
			_, err := p.Get()
			return err
		}, nil
	})
}

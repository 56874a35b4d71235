package seqid_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// BenchmarkRealCAS measures IDs/s drawn by Next (one compare-and-set per
// ID) on a real standalone server, with 1, 4 and 16 clients, each on its
// own session and executor, all on one node. b.N is the number of IDs in
// all, shared out between the clients.
func BenchmarkRealCAS(b *testing.B) {
	zkserver.Require(b)
	srv := zkserver.Standalone(b, realOpts)
	for _, clients := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			path := fmt.Sprintf("/bench-cas-%d", clients)
			benchDraw(b, srv.Addrs(), clients, func(ex *executor.Executor) func(context.Context) (int64, error) {
				return func(ctx context.Context) (int64, error) { return executor.Await(ctx, ex, seqid.Next(path)) }
			})
		})
	}
}

// BenchmarkRealBlocks measures IDs/s drawn from blocks of 1000 on a real
// standalone server, with 16 clients, each with its own Allocator on its
// own session and executor.
func BenchmarkRealBlocks(b *testing.B) {
	zkserver.Require(b)
	srv := zkserver.Standalone(b, realOpts)
	const clients, size = 16, 1000
	b.Run(fmt.Sprintf("clients=%d/block=%d", clients, size), func(b *testing.B) {
		benchDraw(b, srv.Addrs(), clients, func(ex *executor.Executor) func(context.Context) (int64, error) {
			a, err := seqid.NewAllocator("/bench-blocks", size)
			if err != nil {
				b.Fatal(err)
			}
			return func(ctx context.Context) (int64, error) { return executor.Await(ctx, ex, a.Next()) }
		})
	})
	// The blocking Client takes IDs from its block without a trip
	// through the executor.
	b.Run(fmt.Sprintf("generator/clients=%d/block=%d", clients, size), func(b *testing.B) {
		benchDraw(b, srv.Addrs(), clients, func(ex *executor.Executor) func(context.Context) (int64, error) {
			g, err := seqid.NewClient(ex, "/bench-blocks", size)
			if err != nil {
				b.Fatal(err)
			}
			return g.Next
		})
	})
}

// benchDraw connects the clients (untimed), then has each draw its share
// of b.N IDs on a goroutine of its own, and reports IDs/s over all.
func benchDraw(b *testing.B, addrs []string, clients int, mk func(*executor.Executor) func(context.Context) (int64, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	draws := make([]func(context.Context) (int64, error), clients)
	for i := range draws {
		draws[i] = mk(realtest.Dial(b, ctx, addrs, realtest.Options{}).Ex)
	}
	errs := make([]error, clients)
	var wg sync.WaitGroup
	b.ResetTimer()
	for i, draw := range draws {
		n := b.N / clients
		if i < b.N%clients {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				if _, err := draw(ctx); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ids/s")
}

package lock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/internal/netproxy"
	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// BenchmarkRealHandoff measures handoffs where a round trip costs
// something: a real standalone server (forceSync=no), every client
// reaching it through a netproxy that delays each direction by 0.5 ms (a
// round trip of at least 1 ms). clients Clients on one directory take and
// release the lock in a loop with nothing in between, so under contention
// every acquire is a handoff. The listing handoff (WithListingHandoff,
// the lock before the mark) and the marked one run side by side; b.N is
// the number of acquire+release pairs in all. Figures in the package doc
// (Cost).
func BenchmarkRealHandoff(b *testing.B) {
	zkserver.Require(b)
	opts := realOpts
	opts.Throughput = true
	opts.Extra = []string{"forceSync=no"}
	srv := zkserver.Standalone(b, opts)
	p, err := netproxy.New(srv.Addrs()[0])
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	p.Delay(500 * time.Microsecond)
	run := 0
	for _, clients := range []int{4, 16} {
		for _, mode := range []string{"listing", "marked"} {
			b.Run(fmt.Sprintf("clients=%d/handoff=%s", clients, mode), func(b *testing.B) {
				var lopts []lock.Option
				if mode == "listing" {
					lopts = append(lopts, lock.WithListingHandoff())
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				run++
				dir := fmt.Sprintf("/bench-handoff-%d", run)
				ms := make([]*lock.Client, clients)
				for i := range ms {
					m, err := lock.NewClient(realtest.Dial(b, ctx, []string{p.Addr()}, realtest.Options{}).Ex, dir, lopts...)
					if err != nil {
						b.Fatal(err)
					}
					ms[i] = m
				}
				errs := make([]error, clients)
				var wg sync.WaitGroup
				b.ResetTimer()
				for i, m := range ms {
					n := b.N / clients
					if i < b.N%clients {
						n++
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range n {
							h, err := m.Acquire(ctx)
							if err == nil {
								err = m.Release(ctx, h)
							}
							if err != nil {
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
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "handoffs/s")
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/handoff")
			})
		}
	}
}

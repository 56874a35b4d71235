package partition_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// BenchmarkRealRebalance measures, on a real standalone server, how long
// the items of a set of 12 take to move when a member leaves and when it
// joins again, with 3 members and Stable of 100ms: one op is a leave and
// a join, each waited for until every member is Acquired with its
// KazooAssign share. The metric ms/rebalance is the time of one such
// change beyond Stable (what the protocol adds to the wait for a stable
// party: the listings, the releases and the lock handovers).
func BenchmarkRealRebalance(b *testing.B) {
	zkserver.Require(b)
	srv := zkserver.Standalone(b, zkserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const stable = 100 * time.Millisecond
	var items []string
	for i := range 12 {
		items = append(items, fmt.Sprintf("i%02d", i))
	}
	path := fmt.Sprintf("/bench-part-%d", time.Now().UnixNano())
	type member struct {
		c       *partition.Client
		m       *partition.Member
		id      string
		changed chan struct{}
	}
	ms := make([]*member, 3)
	join := func(mb *member) {
		var err error
		mb.m, err = mb.c.Join(ctx, mb.id, func(partition.Change) {
			select {
			case mb.changed <- struct{}{}:
			default:
			}
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for i := range ms {
		c, err := partition.NewClient(realtest.Dial(b, ctx, srv.Addrs(), realtest.Options{}).Ex, path, items, partition.WithStable(stable))
		if err != nil {
			b.Fatal(err)
		}
		ms[i] = &member{c: c, id: fmt.Sprintf("m%d", i), changed: make(chan struct{}, 1)}
		join(ms[i])
	}
	// balanced waits until the members of live hold their shares.
	balanced := func(live []*member) {
		var ids []string
		for _, mb := range live {
			ids = append(ids, mb.id)
		}
		for {
			done := true
			for _, mb := range live {
				var got []string
				for _, h := range mb.m.Held() {
					got = append(got, h.Item)
				}
				if mb.m.State() != partition.Acquired || fmt.Sprint(got) != fmt.Sprint(partition.KazooAssign(mb.id, ids, items)) {
					done = false
					select {
					case <-mb.changed:
					case <-ctx.Done():
						b.Fatal(ctx.Err())
					}
					break
				}
			}
			if done {
				return
			}
		}
	}
	balanced(ms)
	b.ResetTimer()
	start := time.Now()
	n := 0
	for b.Loop() {
		if err := ms[2].c.Leave(ctx, ms[2].m); err != nil {
			b.Fatal(err)
		}
		balanced(ms[:2])
		join(ms[2])
		balanced(ms)
		n++
	}
	per := time.Since(start) / time.Duration(2*n)
	b.ReportMetric(float64(per-stable)/float64(time.Millisecond), "ms/rebalance")
}

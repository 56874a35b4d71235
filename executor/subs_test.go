package executor_test

import (
	"testing"

	"github.com/zkflow/zkflow/internal/memcheck"
	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

// Subscriptions canceled while the session never changes state are
// dropped (the list does not grow with every Subscribe), and pruning them
// from inside a subscriber, while an event is being handed out, neither
// skips nor repeats a subscriber.
func TestSubscriptionsPruned(t *testing.T) {
	r := rig.New(t)
	const n = 8
	got := make([]int, n)
	for i := range n {
		r.Ex.Subscribe(func(ev task.Event) {
			got[i]++
			if i == 0 {
				for range 1000 { // enough to prune many times over
					r.Ex.Subscribe(func(task.Event) { t.Error("a canceled subscriber was called") })()
				}
			}
		})
	}
	heap0 := memcheck.Heap()
	for range 100_000 {
		buf := new([256]byte) // what a subscriber's callback holds
		r.Ex.Subscribe(func(task.Event) { t.Error("a canceled subscriber was called", buf[0]) })()
	}
	if grew := int64(memcheck.Heap()) - int64(heap0); grew > memcheck.Bound {
		t.Errorf("100,000 canceled subscriptions keep %d bytes", grew)
	}
	r.Conn.Suspend()
	r.Idle()
	for i, c := range got {
		if c != 1 {
			t.Errorf("subscriber %d called %d times, want 1", i, c)
		}
	}
}

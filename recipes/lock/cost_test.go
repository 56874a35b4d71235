package lock_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// cost is what n clients sent for rounds acquire+release cycles each, on
// one lock, with no faults: requests per cycle, directory listings per
// cycle, and the requests by kind.
type cost struct {
	perCycle, listsPerCycle float64
	kinds                   map[string]int
}

func measure(t *testing.T, n, rounds int, opts ...lock.Option) cost {
	t.Helper()
	w, cnts := newWorld(t, 31, n, fakezk.Config{})
	l, err := lock.New("/locks/cost", opts...)
	if err != nil {
		t.Fatal(err)
	}
	left := make([]int, n)
	ended := 0
	var start func(i int)
	start = func(i int) {
		executor.Submit(w.Execs[i], l.Acquire(), func(h *lock.Held, err error) {
			if err != nil {
				t.Errorf("client %d: acquire: %v", i, err)
				ended++
				return
			}
			executor.Submit(w.Execs[i], h.Release(), func(_ task.Unit, err error) {
				if err != nil {
					t.Errorf("client %d: release: %v", i, err)
				}
				if left[i]--; left[i] == 0 {
					ended++
					return
				}
				start(i)
			})
		})
	}
	for i := range n {
		left[i] = rounds
		start(i)
	}
	if !w.Settle(func() bool { return ended == n }) {
		t.Fatalf("stuck with %v rounds left", left)
	}
	c := cost{kinds: map[string]int{}}
	sent, lists := 0, 0
	for _, cn := range cnts {
		sent += cn.sent
		lists += cn.lists
		for k, v := range cn.kinds {
			c.kinds[k] += v
		}
	}
	cycles := float64(n * rounds)
	c.perCycle, c.listsPerCycle = float64(sent)/cycles, float64(lists)/cycles
	return c
}

func (c cost) String() string {
	var ks []string
	for k, v := range c.kinds {
		ks = append(ks, fmt.Sprintf("%s %d", strings.TrimSuffix(k, "Request"), v))
	}
	sort.Strings(ks)
	return fmt.Sprintf("%.2f requests, %.2f listings per cycle (%s)", c.perCycle, c.listsPerCycle, strings.Join(ks, ", "))
}

// Requests per acquire+release with 1, 4 and 16 clients taking the lock
// in a loop on fakezk, the handoff of before the mark (listing) against
// the marked one. Alone, nothing changes (the fast path: create and
// delete). Under contention a handoff lists no more: the listings per
// cycle drop to those that follow the create, and the mark and the
// waiter's two watches (getData, getChildren instead of exists) cost
// about one request more per cycle, off the critical path. Figures in
// the package doc (Cost): go test -run TestHandoffCost -v ./recipes/lock
func TestHandoffCost(t *testing.T) {
	const rounds = 50
	for _, n := range []int{1, 4, 16} {
		old := measure(t, n, rounds, lock.WithListingHandoff())
		cur := measure(t, n, rounds)
		t.Logf("%2d clients: listing handoff %v", n, old)
		t.Logf("%2d clients: marked handoff  %v", n, cur)
		switch {
		case n == 1 && (cur.perCycle != old.perCycle || cur.kinds["SetDataRequest"] != 0):
			t.Errorf("alone: %.2f requests per cycle, %d marks; want %.2f and none", cur.perCycle, cur.kinds["SetDataRequest"], old.perCycle)
		case n > 1 && cur.listsPerCycle >= old.listsPerCycle:
			t.Errorf("%d clients: %.2f listings per cycle, not fewer than the listing handoff's %.2f", n, cur.listsPerCycle, old.listsPerCycle)
		case n > 1 && cur.listsPerCycle > 1.05:
			t.Errorf("%d clients: %.2f listings per cycle: handoffs still list", n, cur.listsPerCycle)
		}
	}
}

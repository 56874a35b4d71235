package fakezk_test

import (
	"slices"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// sessionIDs opens n sessions on a server of the seed, in order, and
// returns their ids in creation order.
func sessionIDs(t *testing.T, seed uint64, n int) []int64 {
	t.Helper()
	srv := fakezk.New(fakezk.Config{Seed: seed})
	ids := make([]int64, n)
	for i := range ids {
		c := srv.Connect(fakezk.ConnConfig{})
		if err := c.Start(func(task.Event) {}); err != nil {
			t.Fatal(err)
		}
		ids[i] = c.SessionID()
		t.Cleanup(func() { c.Close() })
	}
	if got := srv.Sessions(); !slices.Equal(got, ids) {
		t.Fatalf("Sessions() = %x, want creation order %x", got, ids)
	}
	return ids
}

// Session ids look like a real ensemble's (a server id in the high byte,
// its start time, a counter), are unique, nonzero and the same for the
// same seed, and their order is not creation order: sorting by session
// id must not be a way to find who came first.
func TestSessionIDs(t *testing.T) {
	sorted := 0
	for seed := uint64(0); seed < 20; seed++ {
		ids := sessionIDs(t, seed, 40)
		if again := sessionIDs(t, seed, 40); !slices.Equal(ids, again) {
			t.Fatalf("seed %d: two servers of one seed hand out %x and %x", seed, ids, again)
		}
		seen := map[int64]bool{}
		servers := map[int64]bool{}
		for _, id := range ids {
			if id <= 0 || seen[id] {
				t.Fatalf("seed %d: id %#x is zero, negative or handed out twice: %x", seed, id, ids)
			}
			seen[id] = true
			if hi := id >> 56; hi < 1 || hi > 127 {
				t.Fatalf("seed %d: id %#x: server byte %d outside 1..127", seed, id, hi)
			}
			servers[id>>56] = true
		}
		if n := len(servers); n != 3 && n != 5 {
			t.Errorf("seed %d: ids from %d servers, want 3 or 5: %x", seed, n, ids)
		}
		if slices.IsSorted(ids) {
			sorted++
		}
	}
	if sorted > 0 {
		t.Errorf("%d of 20 seeds hand out ids in creation order", sorted)
	}
	if a, b := sessionIDs(t, 1, 5), sessionIDs(t, 2, 5); slices.Equal(a, b) {
		t.Errorf("seeds 1 and 2 hand out the same ids %x", a)
	}
}

package seqid_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/seqid"
)

func TestNewAllocatorBadSize(t *testing.T) {
	for _, size := range []int64{0, -1, -1 << 62} {
		if _, err := seqid.NewAllocator(path, size); !errors.Is(err, seqid.ErrBadCount) {
			t.Errorf("NewAllocator(%d) = %v, want ErrBadCount", size, err)
		}
	}
	if _, err := seqid.NewAllocator(path, 1); err != nil {
		t.Errorf("NewAllocator(1) = %v: blocks of one ID are valid", err)
	}
}

// Allocators on separate sessions draw from their blocks at once: IDs are
// unique, each allocator's increase, and the node is at the top of the
// last block reserved, which covers every ID handed out.
func TestAllocatorsUnique(t *testing.T) {
	const clients, each, size = 3, 30, 7
	for seed := uint64(1); seed <= 10; seed++ {
		w := newWorld(t, seed, clients, fakezk.Config{})
		got := newIDs(t, seed)
		allocs := make([]*seqid.Allocator, clients)
		ended := 0
		for i := range clients {
			a, err := seqid.NewAllocator(path, size)
			if err != nil {
				t.Fatal(err)
			}
			allocs[i] = a
			var last int64
			record := func(id int64) {
				if id <= last {
					t.Errorf("seed %d: allocator %d drew %d after %d", seed, i, id, last)
				}
				last = id
				got.add(i, id)
			}
			executor.Submit(w.Execs[i], drawLoop(a.Next(), each, record), func(_ int, err error) {
				if err != nil {
					t.Errorf("seed %d: client %d: %v", seed, i, err)
				}
				ended++
			})
		}
		if !w.Settle(func() bool { return ended == clients }) {
			t.Fatalf("seed %d: flows did not end", seed)
		}
		v := w.value(path)
		var left int64
		for _, a := range allocs {
			left += a.Remaining()
		}
		if len(got.who) != clients*each || v%size != 0 || got.max > v || int64(clients*each)+left != v {
			t.Fatalf("seed %d: %d ids, max %d, node %d, %d left in hand", seed, len(got.who), got.max, v, left)
		}
	}
}

// Flows of one executor that find the allocator empty at the same time
// each reserve a block; every block is used, none is thrown away.
func TestAllocatorConcurrentFlows(t *testing.T) {
	w := newWorld(t, 1, 1, fakezk.Config{})
	a, err := seqid.NewAllocator(path, 5)
	if err != nil {
		t.Fatal(err)
	}
	got := newIDs(t, 1)
	ended := 0
	for i := range 3 {
		executor.Submit(w.Execs[0], a.Next(), func(id int64, err error) {
			if err != nil {
				t.Errorf("flow %d: %v", i, err)
			}
			got.add(i, id)
			ended++
		})
	}
	if !w.Settle(func() bool { return ended == 3 }) {
		t.Fatal("flows did not end")
	}
	if v := w.value(path); v != 15 || a.Remaining() != 12 {
		t.Fatalf("node %d, %d left; want 15 and 12", v, a.Remaining())
	}
	// The rest comes from the blocks in hand, lowest first, with no round trip.
	var ids []int64
	for range 12 {
		id, err := run(w, 0, a.Next())
		if err != nil {
			t.Fatal(err)
		}
		got.add(9, id)
		ids = append(ids, id)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("ids from hand not increasing: %v", ids)
		}
	}
	if v := w.value(path); v != 15 || got.max != 15 || len(got.who) != 15 {
		t.Fatalf("node %d, max %d, %d ids", v, got.max, len(got.who))
	}
}

// An allocator that is dropped (a crash) leaves a gap: the next one starts
// above its block.
func TestAllocatorCrashLeavesGap(t *testing.T) {
	w := newWorld(t, 1, 1, fakezk.Config{})
	a, _ := seqid.NewAllocator(path, 10)
	if id, err := run(w, 0, a.Next()); err != nil || id != 1 {
		t.Fatalf("first id %d, %v", id, err)
	}
	b, _ := seqid.NewAllocator(path, 10)
	if id, err := run(w, 0, b.Next()); err != nil || id != 11 {
		t.Fatalf("after the crash: %d, %v, want 11", id, err)
	}
	if id, err := run(w, 0, seqid.Next(path)); err != nil || id != 21 {
		t.Fatalf("Next after blocks: %d, %v, want 21", id, err)
	}
}

package partition_test

import "github.com/zkflow/zkflow/recipes/partition"

// believers counts, for each item, the members that believe they hold it
// among those a simulation judges (the live ones), from the members'
// Change reports: a member's Hold changes only with a report, and a report
// that changes the items held calls the member's on. The oneHolder judges
// run at every request; with the counts they look at a member's holds
// and the server only for an item that two live members count for.
// Not safe for concurrent use: the caller locks.
type believers struct {
	counts map[string]int
}

// believer is one member's entry: the items its last report held.
type believer struct {
	items []string
	live  bool
}

func newBelievers() *believers { return &believers{counts: map[string]int{}} }

// report records a Change of b's member.
func (bs *believers) report(b *believer, held []partition.Hold) {
	bs.add(b, -1)
	b.items = b.items[:0]
	for _, h := range held {
		b.items = append(b.items, h.Item)
	}
	bs.add(b, 1)
}

// setLive counts b's items (live) or stops counting them.
func (bs *believers) setLive(b *believer, live bool) {
	if b == nil || b.live == live {
		return
	}
	if !live {
		bs.add(b, -1)
	}
	b.live = live
	bs.add(b, 1)
}

func (bs *believers) add(b *believer, d int) {
	if !b.live {
		return
	}
	for _, it := range b.items {
		bs.counts[it] += d
	}
}

// contested reports whether two live members or more believe they hold it.
func (bs *believers) contested(it string) bool { return bs.counts[it] >= 2 }

package partition_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/recipes/partition"
)

// seqOf is the sequence number of a lock node's path.
func seqOf(t *testing.T, path string) int64 {
	t.Helper()
	i := strings.LastIndex(path, "__lock__")
	n, err := strconv.ParseInt(path[i+len("__lock__"):], 10, 64)
	if i < 0 || err != nil {
		t.Fatalf("not a lock node: %s", path)
	}
	return n
}

// A member whose lock node is numbered near the end of its item
// directory's counter (zkops.ResetAbove) deletes the directory when it
// gives the item up or leaves and the directory is then empty, so that
// the counter restarts long before it runs out (as recipes/lock does);
// a directory where another contender waits is kept.
func TestCounterNearEndRestarts(t *testing.T) {
	w := newWorld(t, 1, 2)
	// m0 alone holds every item; beside m1 it keeps the first three and
	// nobody takes the others, so their directories are left empty.
	assign := func(id string, members, its []string) []string {
		switch {
		case id != "m0":
			return nil
		case len(members) > 1:
			return its[:3]
		}
		return its
	}
	p, err := partition.New("/work", items, partition.WithStable(stable), partition.WithAssign(assign))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/work", "/work/locks"} {
		if err := w.Server.AdminCreate(d, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, it := range items {
		dir := p.ItemDir(it)
		if err := w.Server.AdminCreate(dir, nil, 0); err != nil {
			t.Fatal(err)
		}
		st, _ := w.NodeStat(dir)
		if err := w.SetCounters(dir, st.Version, zkops.ResetAbove); err != nil {
			t.Fatal(err)
		}
	}
	holding := func(m *partition.Member, want []string) func() bool {
		return func() bool {
			var got []string
			for _, h := range m.Held() {
				got = append(got, h.Item)
			}
			return m.State() == partition.Acquired && slices.Equal(got, want)
		}
	}
	exists := func(it string) bool { _, ok := w.NodeStat(p.ItemDir(it)); return ok }

	m0 := join(t, w, p, 0)
	if !w.Settle(holding(m0, items)) {
		t.Fatalf("m0 alone holds %v", m0.Held())
	}
	for _, h := range m0.Held() {
		if n := seqOf(t, h.Path); n < zkops.ResetAbove {
			t.Fatalf("%s: numbered %d, below ResetAbove: the test does not test", h.Path, n)
		}
	}
	// Giving up: m0 gives q3..q6 up; nobody contends for them.
	m1 := join(t, w, p, 1)
	gone := func(its []string) func() bool {
		return func() bool { return !slices.ContainsFunc(its, exists) }
	}
	if !w.Settle(func() bool { return holding(m0, items[:3])() && gone(items[3:])() }) {
		for _, it := range items[3:] {
			if exists(it) {
				t.Errorf("%s: directory kept after its holder (numbered at or above ResetAbove) gave it up, empty: children %v", it, w.Children(p.ItemDir(it)))
			}
		}
		t.Fatalf("m0 holds %v", m0.Held())
	}
	if slices.ContainsFunc(items[:3], func(it string) bool { return !exists(it) }) {
		t.Fatalf("a held item's directory was deleted")
	}
	// Leaving: m0's last three go too.
	if _, err := sim.Run(w, 0, m0.Leave()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(gone(items)) {
		for _, it := range items {
			if exists(it) {
				t.Errorf("%s: directory kept after its holder left it empty: children %v", it, w.Children(p.ItemDir(it)))
			}
		}
	}
	if _, err := sim.Run(w, 1, m1.Leave()); err != nil {
		t.Fatal(err)
	}
	// The next holder's number starts again from zero.
	again := join(t, w, p, 0)
	if !w.Settle(holding(again, items)) {
		t.Fatalf("m0 again holds %v", again.Held())
	}
	for _, h := range again.Held() {
		if n := seqOf(t, h.Path); n >= zkops.ResetAbove {
			t.Errorf("%s: numbered %d after the reset", h.Path, n)
		}
	}
}

package lock

import (
	"slices"
	"testing"
)

func TestSeqOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		seq  int64
		ok   bool
	}{
		{"_c_0bad-lock-0000000007", 7, true},
		{"_c_x-lock-y-lock-0000000012", 12, true}, // the last "lock-" counts, as in Curator
		{"lock-0000000003", 3, true},
		{"foo-lock-2147483647", 2147483647, true},
		{"0123abcd__lock__0000000001", 0, false}, // kazoo
		{"stray", 0, false},
		{"lock-", 0, false},
		{"a-lock--2147483648", -2147483648, true}, // a wrapped counter (more in zkops.SeqAfter's test)
	} {
		seq, ok := seqOf(tc.name)
		if seq != tc.seq || ok != tc.ok {
			t.Errorf("seqOf(%q) = %d, %v; want %d, %v", tc.name, seq, ok, tc.seq, tc.ok)
		}
	}
}

// The queue is ordered by the parsed number, whatever the listing order and
// whatever the prefixes; foreign names are left out.
func TestQueue(t *testing.T) {
	q := queue([]string{"_c_b-lock-0000000010", "stray", "_c_a-lock-0000000002", "x__lock__0000000001", "_c_c-lock-0000000009"})
	var names []string
	for _, c := range q {
		names = append(names, c.Name)
	}
	want := []string{"_c_a-lock-0000000002", "_c_c-lock-0000000009", "_c_b-lock-0000000010"}
	if !slices.Equal(names, want) {
		t.Fatalf("queue = %v, want %v", names, want)
	}
}

func TestNewIDIsUUIDShaped(t *testing.T) {
	id := newID(0x0123456789abcdef, 0xfedcba9876543210)
	if id != "01234567-89ab-cdef-fedc-ba9876543210" {
		t.Fatalf("newID = %s", id)
	}
}

// The create's path is built by hand, in one allocation: it must be what
// prefix(newID(...)) under the directory spells.
func TestContenderPathIsPrefixOfNewID(t *testing.T) {
	for _, v := range [][2]uint64{{0, 0}, {0x0123456789abcdef, 0xfedcba9876543210}, {^uint64(0), ^uint64(0)}, {1, 1 << 63}} {
		want := "/a/b/" + prefix(newID(v[0], v[1]))
		if got := contenderPath("/a/b", v[0], v[1]); got != want {
			t.Errorf("contenderPath(%#x, %#x) = %s, want %s", v[0], v[1], got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = contenderPath("/a/b", 1, 2) }); n != 1 {
		t.Errorf("contenderPath: %v allocations, want 1", n)
	}
}

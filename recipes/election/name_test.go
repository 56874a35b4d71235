package election

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
		{"_c_0-latch-0000000007", 7, true},
		{"latch-0000000012", 12, true},                // Curator's LeaderLatch, unprotected
		{"_c_x-latch-latch-0000000003", 3, true},      // the last tag counts
		{"_c_x-lock-0000000001", 0, false},            // a lock contender
		{"__lock__0000000001", 0, false},              // kazoo
		{"_c_x-latch-", 0, false},                     // no digits
		{"_c_x-latch-00000000001", 0, false},          // 11 digits
		{"_c_x-latch--2147483648", -2147483648, true}, // a wrapped counter
		{"_c_x-latch-12a", 0, false},
	} {
		seq, ok := seqOf(tc.name)
		if seq != tc.seq || ok != tc.ok {
			t.Errorf("seqOf(%q) = %d, %v; want %d, %v", tc.name, seq, ok, tc.seq, tc.ok)
		}
	}
}

func TestQueueOrdersBySequenceAndSkipsStrangers(t *testing.T) {
	q := queue([]string{"_c_b-latch-0000000003", "stray", "_c_a-latch-0000000010", "latch-0000000001", "__lock__0000000000"})
	var got []string
	for _, c := range q {
		got = append(got, c.Name)
	}
	want := []string{"latch-0000000001", "_c_b-latch-0000000003", "_c_a-latch-0000000010"}
	if !slices.Equal(got, want) {
		t.Fatalf("queue = %v, want %v", got, want)
	}
}

func TestNames(t *testing.T) {
	id := newID(0x0123456789abcdef, 0xfedcba9876543210)
	if id != "01234567-89ab-cdef-fedc-ba9876543210" {
		t.Fatalf("newID = %q", id)
	}
	if p := prefix(id); p != "_c_"+id+"-latch-" {
		t.Fatalf("prefix = %q", p)
	}
}

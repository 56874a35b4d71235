package zkops

import (
	"math"
	"slices"
	"testing"
)

// Numbers as ZooKeeper formats a Java int with %010d, before and after the
// counter wraps; anything else after the tag is not a queue member.
func TestSeqAfter(t *testing.T) {
	for _, tc := range []struct {
		name string
		seq  int64
		ok   bool
	}{
		{"_c_x-t-0000000007", 7, true},
		{"_c_x-t-y-t-0000000012", 12, true}, // the last tag counts
		{"t-2147483647", 2147483647, true},
		{"stray", 0, false},
		{"t-", 0, false},
		{"a-t-12x", 0, false},
		{"a-t--000000001", -1, true}, // a wrapped counter
		{"a-t--2147483648", -2147483648, true},
		{"a-t-2147483648", 0, false}, // not a Java int
		{"a-t--", 0, false},
		{"a-t---00000001", 0, false},
		{"b-t-12345678901", 0, false}, // 11 digits
		{"b-t-00000000012", 0, false}, // 11 digits, a Java int's value
		{"b-t-000000000012", 0, false},
		{"b-t--00000000012", 0, false}, // a minus sign and 11 digits
		{"b-t-+000000012", 0, false},   // only a minus sign is a sign
		{"", 0, false},
	} {
		seq, ok := SeqAfter(tc.name, "t-")
		if seq != tc.seq || ok != tc.ok {
			t.Errorf("SeqAfter(%q) = %d, %v; want %d, %v", tc.name, seq, ok, tc.seq, tc.ok)
		}
	}
}

// The numbers a server can no longer order are math.MaxInt32 (the counter
// stuck at its maximum) and the negative ones (the counter wrapped).
func TestExhausted(t *testing.T) {
	for _, tc := range []struct {
		seq  int64
		want bool
	}{
		{0, false},
		{ResetAbove, false},
		{math.MaxInt32 - 1, false},
		{math.MaxInt32, true},
		{-1, true},
		{math.MinInt32, true},
	} {
		if got := Exhausted(tc.seq); got != tc.want {
			t.Errorf("Exhausted(%d) = %v, want %v", tc.seq, got, tc.want)
		}
	}
}

// The queue is ordered by the parsed number (a wrapped, negative one
// first), whatever the listing order and prefixes; other names are left
// out.
func TestQueue(t *testing.T) {
	q := Queue([]string{"_c_b-t-0000000010", "stray", "_c_a-t--2147483648", "_c_c-t-0000000009", "t-"}, "t-")
	want := []Member{{"_c_a-t--2147483648", -2147483648}, {"_c_c-t-0000000009", 9}, {"_c_b-t-0000000010", 10}}
	if !slices.Equal(q, want) {
		t.Fatalf("Queue = %v, want %v", q, want)
	}
}

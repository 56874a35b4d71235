package chunk

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// New hands out distinct zero values, size to a chunk; Cut hands out
// zeroed slices whose appends do not reach the next cut, and starts a new
// chunk when the current one has fewer values left than asked.
func TestNewAndCut(t *testing.T) {
	var c Of[int]
	seen := map[*int]bool{}
	for i := range 10 {
		p := c.New(4)
		if *p != 0 || seen[p] {
			t.Fatalf("value %d: %d, seen before %v", i, *p, seen[p])
		}
		seen[p] = true
		*p = i + 1
	}
	if got := len(c); got != 2 { // 10 values from chunks of 4: 2 left in the third
		t.Fatalf("%d values left in the chunk, want 2", got)
	}
	var s Of[int]
	a := s.Cut(3, 8)
	b := s.Cut(3, 8)
	if len(a) != 3 || cap(a) != 3 || len(b) != 3 || cap(b) != 3 {
		t.Fatalf("cuts %d/%d and %d/%d, want 3/3", len(a), cap(a), len(b), cap(b))
	}
	a = append(a, 9)
	if b[0] != 0 {
		t.Fatal("an append to one cut reached the next")
	}
	b[0] = 5
	c3 := s.Cut(3, 8) // 2 left: a new chunk
	if len(c3) != 3 || c3[0] != 0 || &c3[0] == &b[0] {
		t.Fatalf("third cut %v", c3)
	}
	if n := testing.AllocsPerRun(100, func() { s.Cut(1, 1024) }); n > 0.1 {
		t.Errorf("a cut from a chunk with room allocated %v times", n)
	}
	_ = a
}

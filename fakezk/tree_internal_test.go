package fakezk

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// childNames stays the sorted names of the children through links and
// unlinks (kept up to date once listed, not sorted again), and a slice it
// returned never changes afterwards (callers share it).
func TestChildNamesKeptThroughChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := &node{}
	type kept struct{ got, copy []string }
	var old []kept
	for step := range 20000 {
		name := fmt.Sprintf("c%03d", rng.IntN(200))
		switch rng.IntN(5) {
		case 0, 1:
			n.link(name, &node{})
		case 2:
			n.unlink(name)
		default:
			got := n.childNames()
			if want := slices.Sorted(maps.Keys(n.children)); !slices.Equal(got, want) {
				t.Fatalf("step %d: childNames %v, want %v", step, got, want)
			}
			if rng.IntN(10) == 0 {
				old = append(old, kept{got, slices.Clone(got)})
			}
		}
	}
	for i, k := range old {
		if !slices.Equal(k.got, k.copy) {
			t.Fatalf("slice %d returned earlier changed since", i)
		}
	}
}

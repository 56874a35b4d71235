package cache

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// pathSet gives the paths in the set smallest first, whatever was added,
// deleted and added again, as a sorted copy of a plain set would.
func TestPathSetOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var s pathSet
		want := map[string]bool{}
		for range 300 {
			p := "/t/" + string(rune('a'+rng.IntN(26))) + string(rune('a'+rng.IntN(26)))
			switch rng.IntN(4) {
			case 0, 1:
				s.add(p)
				want[p] = true
			case 2:
				s.del(p)
				delete(want, p)
			default:
				got, ok := s.take()
				if len(want) == 0 {
					if ok {
						t.Fatalf("round %d: took %q from an empty set", round, got)
					}
					continue
				}
				keys := make([]string, 0, len(want))
				for k := range want {
					keys = append(keys, k)
				}
				if m := slices.Min(keys); !ok || got != m {
					t.Fatalf("round %d: took %q (%v), want %q", round, got, ok, m)
				}
				delete(want, got)
			}
			if s.len() != len(want) {
				t.Fatalf("round %d: len %d, want %d", round, s.len(), len(want))
			}
		}
	}
}
